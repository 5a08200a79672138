package latency

// The JSON form of this package's type, which every report embeds.
// Durations are integer nanoseconds (fields ending _ns). The form has
// NewJSONX, from the type, and, where a report is read back, a method
// returning the type.

// JSONLatency is a Latency.
type JSONLatency struct {
	Count  int64 `json:"count"`
	MeanNs int64 `json:"mean_ns"`
	P50Ns  int64 `json:"p50_ns"`
	P99Ns  int64 `json:"p99_ns"`
	P999Ns int64 `json:"p999_ns"`
	MaxNs  int64 `json:"max_ns"`
}

// NewJSONLatency is l's JSON form.
func NewJSONLatency(l Latency) JSONLatency {
	return JSONLatency{Count: l.Count, MeanNs: int64(l.Mean), P50Ns: int64(l.P50), P99Ns: int64(l.P99),
		P999Ns: int64(l.P999), MaxNs: int64(l.Max)}
}
