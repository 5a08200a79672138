package locking

// Kernfs74 is kernfs's locking as queued for Linux 7.4 (vfs.git
// vfs-7.4.kernfs, Shakeel Butt's series; whether it reached mainline is
// not verified here): kernfs64's three locks, used less.
//
//   - Revalidation takes no lock (Traits.LocklessRevalidate; "kernfs:
//     remove kernfs_rwsem from dentry revalidation"). The directory's
//     revision is read with READ_ONCE and the parent and name of a
//     positive dentry are checked under RCU, against the dir and name
//     that 6.14 passes to ->d_revalidate(). kernfsim's revision, active
//     count and identity are atomics whose writers publish whole values
//     under the write side, so the caller reads them with atomic loads
//     and takes nothing.
//   - Readdir takes the tree rwsem's read side once per entry and finds
//     the next entry by its full key (Traits.ReaddirPerEntry; "kernfs:
//     don't hold kernfs_rwsem across dir_emit()").
//   - Lookup keeps the tree rwsem's read side; permission and getattr
//     keep the attribute rwsem's (kernfs_iattr_rwsem); open and release
//     the hashed open-file mutexes: the locks are kernfs64's.
//   - Writers hold the write side for less ("kernfs: do less work under
//     the kernfs_rwsem write lock"): kernfsim already makes the node,
//     its name and its identity before taking the write side, activates
//     it under the same acquisition that links it, and tells subscribers
//     after releasing it, under every strategy; so this third patch
//     changes nothing here that a lock counter can see (its lock_stat
//     figure, 1200 to 830 write acquisitions for five dummy netdevs, is
//     the second acquisition kernfs paid per file to activate it).
//
// Counters: kernfs64's (Stats' Read and Write for the tree rwsem, Attr
// and OpenFile for the others). A revalidation adds nothing to them;
// kernfsim's Tree.Revalidations counts revalidations, so a run shows
// how many reads of the tree rwsem it saved.
//
// Reader cost: kernfs64's for lookup, permission, getattr and open; a
// revalidation is three or four atomic loads and writes no line. Readdir:
// one read-side section per entry, each a lookup of the next key.
// Writer cost: kernfs64's, and readdir no longer holds a writer off for
// a whole listing. Allocation: none. Staleness: none: a revalidation
// that races a rename or removal sees either the old or the new
// identity, each whole, and a stale "valid" answer is one a lock would
// also have given just before the writer took it.
type Kernfs74 struct {
	Kernfs64
}

var (
	_ AttrLocker     = (*Kernfs74)(nil)
	_ OpenFileLocker = (*Kernfs74)(nil)
)

func newKernfs74(o Options) *Kernfs74 {
	k := &Kernfs74{}
	k.init(o)
	return k
}

func (k *Kernfs74) Name() string   { return "kernfs74" }
func (k *Kernfs74) Traits() Traits { return mustTraits("kernfs74") }
