package setting

import (
	"errors"
	"fmt"
	"testing"
)

var flags = Table{"Threads": "--threads", "TargetSim": "--sim"}

// TestNamesPut: a table names the fields it has, and leaves the others,
// braces dropped; nil Names names each field as itself.
func TestNamesPut(t *testing.T) {
	const text = "give {Threads} 2 with {TargetSim}, or {Other}"
	for _, c := range []struct {
		n    Names
		want string
	}{
		{flags.Names(), "give --threads 2 with --sim, or Other"},
		{nil, "give Threads 2 with TargetSim, or Other"},
	} {
		if got := c.n.Put(text); got != c.want {
			t.Errorf("Put: got %q, want %q", got, c.want)
		}
	}
	if got := flags.Put("{Threads}"); got != "--threads" {
		t.Errorf("Table.Put: got %q", got)
	}
}

// TestErrorHint: an Error names its hint's fields by the table given.
func TestErrorHint(t *testing.T) {
	e := NewError("Threads", "use {TargetSim}", "%d is too many", 9)
	if got, want := e.Error(), "Threads: 9 is too many (use TargetSim)"; got != want {
		t.Errorf("Error: got %q, want %q", got, want)
	}
	if got, want := e.HintFor(flags.Names()), "use --sim"; got != want {
		t.Errorf("HintFor: got %q, want %q", got, want)
	}
}

// TestInText: a wrapped TextError is named in place, and the error
// still unwraps to it.
func TestInText(t *testing.T) {
	te := &TextError{Text: "measure with {TargetSim}"}
	err := fmt.Errorf("skipping: %w", te)
	got := flags.Names().InText(err)
	if got.Error() != "skipping: measure with --sim" || !errors.Is(got, te) {
		t.Errorf("InText: got %q (is te: %v)", got, errors.Is(got, te))
	}
	plain := errors.New("plain")
	if flags.Names().InText(plain) != plain {
		t.Errorf("InText changed an error without a TextError")
	}
}
