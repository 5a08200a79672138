package locking

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernfs64CountsEachLock: the tree rwsem, the attribute rwsem and the
// open-file mutexes each count on their own counters.
func TestKernfs64CountsEachLock(t *testing.T) {
	k := MustNew("kernfs64").(*Kernfs64)
	k.RUnlock(k.RLock())
	for range 2 {
		k.AttrRUnlock(k.AttrRLock())
	}
	for range 3 {
		k.AttrLock()
		k.AttrUnlock()
	}
	for key := range uint64(4) {
		k.OpenFileLock(key)
		k.OpenFileUnlock(key)
	}
	require.NoError(t, k.Lock())
	k.Unlock()
	st := k.Stats()
	got := [5]int64{st.ReadAcquisitions, st.WriteAcquisitions, st.Attr.ReadAcquisitions, st.Attr.WriteAcquisitions, st.OpenFile.WriteAcquisitions}
	if want := [5]int64{1, 1, 2, 3, 4}; got != want {
		t.Fatalf("tree read, write, attr read, write, open-file: got %v, want %v", got, want)
	}
}

// TestKernfs64AttrLockIsSeparate: a setattr (the attribute rwsem's write
// side) keeps attribute readers out but not the tree's readers; a tree
// writer keeps attribute readers out of nothing.
func TestKernfs64AttrLockIsSeparate(t *testing.T) {
	k := MustNew("kernfs64").(*Kernfs64)
	k.AttrLock()
	k.RUnlock(k.RLock()) // the tree's read side is free
	read := graceGo(func() { k.AttrRUnlock(k.AttrRLock()) })
	graceWaitUntil(t, "an attribute reader waits for the setattr", func() bool { return k.Stats().Attr.ReadContended == 1 })
	if graceIsClosed(read) {
		t.Fatal("an attribute reader got in past the attribute lock's writer")
	}
	k.AttrUnlock()
	graceWaitClosed(t, "the attribute reader", read)

	require.NoError(t, k.Lock())
	k.AttrRUnlock(k.AttrRLock()) // the attribute lock is free under a tree writer
	k.Unlock()
	if st := k.Stats(); st.ReadContended != 0 || st.Attr.ReadAcquisitions != 2 {
		t.Fatalf("tree read contentions %d, attribute reads %d; want 0, 2", st.ReadContended, st.Attr.ReadAcquisitions)
	}
}

// TestOpenFileLocksSpread: consecutive keys (inode numbers) land on
// different mutexes, and every key on one of the 1024.
func TestOpenFileLocksSpread(t *testing.T) {
	var l openFileLocks
	seen := map[*openFileLock]bool{}
	for key := range uint64(1024) {
		seen[l.of(key)] = true
	}
	if len(seen) < 1024*6/10 {
		t.Fatalf("1024 consecutive keys on %d mutexes, want most of 1024", len(seen))
	}
}
