package locking_test

import (
	"fmt"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/locking"
)

func ExampleGrace() {
	// config is published to readers and replaced copy-on-write.
	type config struct{ name string }
	g := locking.NewGrace(locking.GraceConfig{})
	var cur atomic.Pointer[config]
	cur.Store(&config{name: "eth0"})

	// A reader: no lock, just a read-side critical section.
	t := g.ReadLock()
	fmt.Println("reader sees", cur.Load().name)
	g.ReadUnlock(t)

	// A writer publishes a copy, then waits until no reader can hold the
	// old one before tearing it down.
	old := cur.Swap(&config{name: "eth1"})
	g.Synchronize()
	fmt.Println("torn down", old.name)

	// Or it queues the teardown and returns at once; Barrier (at unmount,
	// say) waits for everything queued.
	old = cur.Swap(&config{name: "eth2"})
	g.Call(func() { fmt.Println("torn down later", old.name) })
	g.Barrier()

	st := g.Stats()
	fmt.Println("callbacks run:", st.CallbacksRun, "pending:", st.Pending)
	// Output:
	// reader sees eth0
	// torn down eth0
	// torn down later eth1
	// callbacks run: 1 pending: 0
}
