package errtally

// The JSON form of this package's type, which every report embeds.
// Durations are integer nanoseconds (fields ending _ns). The form has
// NewJSONX, from the type, and, where a report is read back, a method
// returning the type.

// JSONError is an ErrorCount.
type JSONError struct {
	Errno    string `json:"errno"` // ENOENT; "success" when a missing path was found
	Code     int    `json:"code"`
	Churn    bool   `json:"churn"` // on a churned device's file
	Expected bool   `json:"expected"`
	Count    int64  `json:"count"`
	Path     string `json:"path"`
}

// NewJSONErrors is es in JSON form, an empty list for none.
func NewJSONErrors(es []ErrorCount) []JSONError {
	out := []JSONError{}
	for _, e := range es {
		out = append(out, JSONError{Errno: e.Name(), Code: int(e.Errno), Churn: e.Churn,
			Expected: e.Expected(), Count: e.Count, Path: e.Path})
	}
	return out
}
