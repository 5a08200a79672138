// Package textout holds what the text reports of loadgen and its tools share.
//
// It has a writer that keeps the first error, and duration formats.
package textout

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// Writer remembers the first write error and skips writes after it.
type Writer struct {
	w   io.Writer
	err error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Printf writes as fmt.Fprintf, unless a write has failed.
func (e *Writer) Printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// Err is the first write error, or nil.
func (e *Writer) Err() error { return e.err }

// Dur prints d with three significant digits in ns, us, ms or s.
func Dur(d time.Duration) string {
	v := float64(d)
	switch {
	case v < 1e3:
		return strconv.FormatFloat(v, 'f', 0, 64) + "ns"
	case v < 1e6:
		return sig3(v/1e3) + "us"
	case v < 1e9:
		return sig3(v/1e6) + "ms"
	}
	return sig3(v/1e9) + "s"
}

func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// SignedDur is Dur with its sign: "+1.20ms", "-3.00us".
func SignedDur(d time.Duration) string {
	if d < 0 {
		return "-" + Dur(-d)
	}
	return "+" + Dur(d)
}
