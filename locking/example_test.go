package locking_test

import (
	"fmt"
	"time"

	"github.com/kernfsim/kernfsim/locking"
)

// Strategies are chosen by name; an unknown name lists the valid ones.
func ExampleNew() {
	s, _ := locking.New("rwsem", locking.Options{})
	r := s.RLock()
	s.RUnlock(r)
	fmt.Println(s.Name(), s.Stats().ReadAcquisitions)

	_, err := locking.New("spinlock", locking.Options{})
	fmt.Println(err)
	// Output:
	// rwsem 1
	// unknown lock strategy "spinlock": valid strategies are mutex, rwsem, rcu, none, kernfs64, kernfs74, percpu, percpu-dyn, bravo
}

// Utilization divides the hold time between two snapshots by the wall
// time between them: here an rwsem's, taken two seconds apart. A shared
// read side held 3s in 2s had 1.5 readers in it on average; the write
// side was busy a quarter of the time.
func ExampleStats_Utilization() {
	before := locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 1000, ReadHeld: 2 * time.Second, WriteAcquisitions: 10, WriteHeld: time.Second}}
	after := locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 9000, ReadHeld: 5 * time.Second, WriteAcquisitions: 30, WriteHeld: 1500 * time.Millisecond}}
	d := after.Sub(before)
	read, write := d.Utilization(2 * time.Second)
	fmt.Println(d.ReadAcquisitions, d.ReadHeld, d.WriteAcquisitions, d.WriteHeld)
	fmt.Println(read, write)
	// Output:
	// 8000 3s 20 500ms
	// 1.5 0.25
}
