package setting

import "regexp"

// Names says how a caller names configuration fields in text it
// shows: cmd/loadgen names them by their flags. A nil Names names
// each field by itself. Text the engine writes (a Error's Hint, a
// result's warnings) names fields as {Field} (or {Tree.Cgroups}, or a
// constant such as {TargetSim}), and Put puts them.
type Names func(field string) string

// fieldRef is a field a text names: {Field}.
var fieldRef = regexp.MustCompile(`\{[A-Za-z][A-Za-z.]*\}`)

// Name is field as n names it.
func (n Names) Name(field string) string {
	if n == nil {
		return field
	}
	return n(field)
}

// Put is text with each field it names as n names it.
func (n Names) Put(text string) string {
	return fieldRef.ReplaceAllStringFunc(text, func(ref string) string { return n.Name(ref[1 : len(ref)-1]) })
}
