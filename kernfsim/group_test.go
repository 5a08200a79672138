package kernfsim

import (
	"context"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

func TestAddGroupAllOrNothing(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		a, b := mkpath(t, tr, "a"), mkpath(t, tr, "b")
		testkit.Must(tr.Mkdir(b, "taken", 0o755))(t)
		before := tr.Nodes()
		kids := []BatchEntry{{"x", NodeSpec{Kind: KindAttr, Source: Static("x\n")}}}
		for _, c := range []struct {
			name string
			ps   []Placement
			want syscall.Errno
		}{
			{"second name taken", []Placement{{Parent: a, Name: "taken", Spec: NodeSpec{Kind: KindDir}, Children: kids}, {Parent: b, Name: "taken", Spec: NodeSpec{Kind: KindSymlink, Target: "../a/taken"}}}, syscall.EEXIST},
			{"name repeated", []Placement{{Parent: a, Name: "n", Spec: NodeSpec{Kind: KindDir}}, {Parent: a, Name: "n", Spec: NodeSpec{Kind: KindDir}}}, syscall.EEXIST},
			{"cap reached", []Placement{{Parent: b, Name: "n", Spec: NodeSpec{Kind: KindDir}, MaxSubdirs: 1}}, syscall.ENOSPC},
			{"child named twice", []Placement{{Parent: a, Name: "n", Spec: NodeSpec{Kind: KindDir}, Children: append(kids, kids[0])}}, syscall.EEXIST},
			{"child of a bad kind", []Placement{{Parent: a, Name: "n", Spec: NodeSpec{Kind: KindDir}, Children: append(kids, BatchEntry{"d", NodeSpec{Kind: KindDir}})}}, syscall.EINVAL},
			{"children of an attribute", []Placement{{Parent: a, Name: "n", Spec: NodeSpec{Kind: KindAttr, Source: Static("")}, Children: kids}}, syscall.EINVAL},
		} {
			_, err := tr.AddGroup(c.ps)
			testkit.WantErrno(t, err, c.want)
			if tr.Nodes() != before {
				t.Fatalf("%s: nodes: got %d, want %d (nothing may change)", c.name, tr.Nodes(), before)
			}
		}
		testkit.Must(tr.AddGroup([]Placement{{Parent: a, Name: "dev", Spec: NodeSpec{Kind: KindDir}, Children: kids}, {Parent: b, Name: "dev", Spec: NodeSpec{Kind: KindSymlink, Target: "../a/dev"}}}))(t)
		if got, want := tr.Nodes(), before+3; got != want {
			t.Fatalf("nodes after a group of 3: got %d, want %d", got, want)
		}
		w := NewWalker(tr, WalkerOptions{})
		testkit.Must(w.Resolve(RootCred, "b/dev/x"))(t)
		testkit.WantErrno(t, tr.RemoveNamed(context.Background(), ChildRef{Parent: a, Name: "dev"}, ChildRef{Parent: b, Name: "nosuch"}), syscall.ENOENT)
		require.NoError(t, tr.RemoveNamed(context.Background(), ChildRef{Parent: a, Name: "dev"}, ChildRef{Parent: b, Name: "dev"}, ChildRef{Parent: b, Name: "nosuch", Optional: true}))
		if tr.Barrier(); tr.Nodes() != before {
			t.Fatalf("nodes after RemoveNamed: got %d, want %d", tr.Nodes(), before)
		}
	})
}
