package locking_test

import (
	"fmt"

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
	// unknown lock strategy "spinlock": valid strategies are mutex, rwsem, rcu, none
}
