package harness

import "regexp"

// FieldNames says how a caller names configuration fields in text it
// shows: cmd/loadgen names them by their flags. A nil FieldNames names
// each field by itself. Text the engine writes (a ConfigError's Hint, a
// result's warnings) names fields as {Field} (or {Tree.Cgroups}, or a
// constant such as {TargetSim}), and Put puts them.
type FieldNames func(field string) string

// fieldRef is a field a text names: {Field}.
var fieldRef = regexp.MustCompile(`\{[A-Za-z][A-Za-z.]*\}`)

// Name is field as n names it.
func (n FieldNames) Name(field string) string {
	if n == nil {
		return field
	}
	return n(field)
}

// Put is text with each field it names as n names it.
func (n FieldNames) Put(text string) string {
	return fieldRef.ReplaceAllStringFunc(text, func(ref string) string { return n.Name(ref[1 : len(ref)-1]) })
}
