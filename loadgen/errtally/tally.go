package errtally

import (
	"cmp"
	"slices"
	"syscall"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// ErrorCount is how often operations failed with one errno.
type ErrorCount struct {
	Errno syscall.Errno
	// Churn is set for failures on a churned device's file; ENOENT and
	// ENODEV there are expected (the device was being removed).
	Churn bool
	Count int64
	Path  string // one path it happened on
}

// Expected reports whether the failure is one churn causes.
func (e ErrorCount) Expected() bool {
	return e.Churn && (e.Errno == syscall.ENOENT || e.Errno == syscall.ENODEV)
}

// Name is the errno's symbol, such as ENOENT.
func (e ErrorCount) Name() string { return kernfsim.ErrnoName(e.Errno) }

// ErrorTally counts failures by errno and kind (expected churn or not),
// keeping the first path of each. Make one with ErrorTally{}.
type ErrorTally map[errKey]*ErrorCount

type errKey struct {
	errno syscall.Errno
	churn bool
}

// Add counts n failures with errno e on path.
func (t ErrorTally) Add(e syscall.Errno, churn bool, path string, n int64) {
	k := errKey{e, churn}
	if c := t[k]; c != nil {
		c.Count += n
		return
	}
	t[k] = &ErrorCount{Errno: e, Churn: churn, Count: n, Path: path}
}

// Merge adds o's counts to t.
func (t ErrorTally) Merge(o ErrorTally) {
	for k, c := range o {
		t.Add(k.errno, k.churn, c.Path, c.Count)
	}
}

// Sorted returns the counts, unexpected first, then by count.
func (t ErrorTally) Sorted() []ErrorCount {
	out := make([]ErrorCount, 0, len(t))
	for _, c := range t {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ErrorCount) int {
		if a.Expected() != b.Expected() {
			if a.Expected() {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Errno, b.Errno))
	})
	return out
}
