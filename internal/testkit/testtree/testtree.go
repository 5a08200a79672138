// Package testtree builds the empty trees that the tests of the packages
// above kernfsim start from. Package kernfsim's own tests cannot import it
// (it imports kernfsim) and keep a copy of New.
package testtree

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// FastGrace keeps rcu removals quick in tests: a 100 us tick.
var FastGrace = locking.GraceConfig{Tick: 100 * time.Microsecond}

// Writers lists the strategies that accept writers after construction.
var Writers = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

// New returns an empty tree under the named strategy, with FastGrace.
// Under none it is not sealed, so fixtures can still be built.
func New(t testing.TB, lock string) *kernfsim.Tree {
	t.Helper()
	s, err := locking.New(lock, locking.Options{Grace: FastGrace})
	require.NoError(t, err)
	return kernfsim.New(s, kernfsim.Options{})
}
