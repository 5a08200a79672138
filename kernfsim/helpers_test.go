package kernfsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// fastGrace keeps rcu removals quick in tests: a 100 us tick.
var fastGrace = locking.GraceConfig{Tick: 100 * time.Microsecond}

// newTestTree returns an empty tree under the named strategy. Under none
// it is not sealed, so fixtures can still be built. It is testtree.New,
// which this package's tests cannot import (testtree imports kernfsim).
func newTestTree(t testing.TB, lock string) *Tree {
	t.Helper()
	s, err := locking.New(lock, locking.Options{Grace: fastGrace})
	require.NoError(t, err)
	return New(s, Options{})
}

// writers lists the strategies that accept writers after construction.
var writers = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

// mkpath makes dirs along path (a/b/c) and returns the last.
func mkpath(t testing.TB, tr *Tree, path ...string) *Node {
	t.Helper()
	d := tr.Root()
	for _, p := range path {
		if n, err := tr.Lookup(d, p); err == nil {
			d = n
			continue
		}
		d = testkit.Must(tr.Mkdir(d, p, 0o755))(t)
	}
	return d
}
