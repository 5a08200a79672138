package setting

import (
	"errors"
	"strings"
)

// Table is a command's one map from field names to what its user sets:
// a flag ("--cpus"), or a phrase ("tree flags"). A field it lacks is
// named as itself.
type Table map[string]string

// Name is field as t names it.
func (t Table) Name(field string) string {
	if n, ok := t[field]; ok {
		return n
	}
	return field
}

// Names is t as a Names.
func (t Table) Names() Names { return t.Name }

// Put is text with each {Field} it names as t names it.
func (t Table) Put(text string) string { return t.Names().Put(text) }

// InText is err with the text of a *TextError in its chain named as n
// names it; the rest of err's text is kept. It unwraps to err
// (TestInText).
func (n Names) InText(err error) error {
	var te *TextError
	if !errors.As(err, &te) {
		return err
	}
	return &namedError{err: err, text: strings.Replace(err.Error(), te.Error(), te.TextFor(n), 1)}
}

// namedError is an error whose text InText named.
type namedError struct {
	err  error
	text string
}

func (e *namedError) Error() string { return e.text }
func (e *namedError) Unwrap() error { return e.err }
