package kernfsim

import (
	"strconv"
	"testing"

	"github.com/kernfsim/kernfsim/locking"
)

// BenchmarkLookup is one LookupErrno under rcu in a directory of size
// children, found or missing: the tree's share of a LOOKUP. Its
// instruction count is steady under load where its time is not:
//
//	valgrind --tool=callgrind ./kernfsim.test -test.run x -test.bench Lookup -test.benchtime 100000x
func BenchmarkLookup(b *testing.B) {
	for _, size := range []int{8, 20, 10_000} {
		tr := New(locking.MustNew("rcu"), Options{})
		d, _ := tr.Mkdir(tr.Root(), "d", 0o755)
		entries := make([]BatchEntry, size)
		for i := range entries {
			entries[i] = BatchEntry{Name: "memory" + strconv.Itoa(i), Spec: NodeSpec{Kind: KindAttr, Source: Static("")}}
		}
		if _, err := tr.AddBatch(d, entries); err != nil {
			b.Fatal(err)
		}
		for _, op := range []struct{ name, child string }{{"found", "memory" + strconv.Itoa(size/2)}, {"missing", "nosuch"}} {
			b.Run("size="+strconv.Itoa(size)+"/op="+op.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					tr.LookupErrno(d, op.child)
				}
			})
		}
	}
}
