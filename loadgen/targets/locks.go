package targets

import (
	"strings"

	"github.com/kernfsim/kernfsim/locking"
)

// AcceptsWriters reports whether the strategy called lock accepts
// writers once the tree is served; false for an unknown name.
func AcceptsWriters(lock string) bool {
	t, err := locking.TraitsOf(lock)
	return err == nil && t.AcceptsWriters
}

// GracePeriods reports whether the strategy called lock orders teardown
// after grace periods; false for an unknown name.
func GracePeriods(lock string) bool {
	t, err := locking.TraitsOf(lock)
	return err == nil && t.GracePeriods
}

// WriterLocksText names the strategies that accept writers once the tree
// is served, as prose for a hint: "mutex, rwsem or rcu".
func WriterLocksText() string {
	w := locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
}
