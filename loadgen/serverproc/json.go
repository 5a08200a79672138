package serverproc

// The JSON form of this package's type, which every report embeds.
// Durations are integer nanoseconds (fields ending _ns). The form has
// NewJSONX, from the type, and, where a report is read back, a method
// returning the type.

// JSONMount is a Mount.
type JSONMount struct {
	Lock              string `json:"lock"` // with its details: "rcu gp=normal tick=4ms"
	Transport         string `json:"transport"`
	Permissions       string `json:"permissions"` // kernel or server
	EntryTimeoutNs    int64  `json:"entry_timeout_ns"`
	AttrTimeoutNs     int64  `json:"attr_timeout_ns"`
	NegativeTimeoutNs int64  `json:"negative_timeout_ns"`
	// Negatives is the server's rule for missing names: lock:cached,
	// lock:uncached or override; absent from a server that does not say.
	Negatives string `json:"negatives,omitempty"`
	// FellBack is why a server left to choose its transport serves over
	// /dev/fuse; absent if it did not fall back.
	FellBack string `json:"fell_back,omitempty"`
}
