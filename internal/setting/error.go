package setting

import "fmt"

// Error is a configuration that cannot run: bad input, not a
// failure. It names configuration fields, never flags: Field is the one
// at fault, and Hint names others as {Field} (or {Tree.Cgroups}, or a
// target kind's constant such as {TargetSim}); a command maps each to its
// flag with HintFor.
type Error struct {
	Field   string // the Config field (or the path) at fault
	Problem string // what is wrong
	Hint    string // what to do about it, naming fields as {Field}
}

func (e *Error) Error() string {
	s := e.Field + ": " + e.Problem
	if h := e.HintFor(nil); h != "" {
		s += " (" + h + ")"
	}
	return s
}

// HintFor is Hint with each field it names put as name puts it.
func (e *Error) HintFor(name Names) string { return name.Put(e.Hint) }

// NewError is a *Error for field, its problem formatted from
// format and args.
func NewError(field, hint, format string, args ...any) *Error {
	return &Error{Field: field, Problem: fmt.Sprintf(format, args...), Hint: hint}
}

// TextError is an error whose text names configuration fields as
// {Field}, as a Error's Hint does. Error names each field by
// itself. A command names them its way with TextFor.
type TextError struct {
	Text string // the message, naming fields as {Field}
}

func (e *TextError) Error() string { return e.TextFor(nil) }

// TextFor is the error's text with each field put as name puts it.
func (e *TextError) TextFor(name Names) string { return name.Put(e.Text) }
