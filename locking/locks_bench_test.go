package locking

import (
	"fmt"
	"testing"

	"github.com/kernfsim/kernfsim/internal/parbench"
)

// BenchmarkLock measures one read-side enter/exit per op, with the
// acquisition counters on and off, so the cost of keeping them on is a
// benchstat comparison away:
//
//	go test -run x -bench Lock -cpu 1,2 ./locking/ | benchstat -col /stats -
func BenchmarkLock(b *testing.B) {
	for _, name := range Names {
		for _, stats := range []string{"on", "off"} {
			s, err := New(name, Options{NoStats: stats == "off"})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("lock=%s/stats=%s/side=read", name, stats), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.RUnlock(s.RLock())
				}
			})
			b.Run(fmt.Sprintf("lock=%s/stats=%s/side=read/parallel", name, stats), func(b *testing.B) {
				b.ReportAllocs()
				parbench.Run(b, 0, func(int) func() { return func() { s.RUnlock(s.RLock()) } })
			})
		}
	}
}
