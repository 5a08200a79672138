// Package kernfsim is a kernfs-like tree under a chosen lock strategy, and a path walker.
//
// kernfs is the filesystem core behind Linux sysfs. The tree's lookup,
// revalidate, permission and write paths run under a locking.Strategy.
// The in-process walker resolves paths the way the kernel's path walk
// does. It knows nothing of what it serves: the sysfs contents (CPUs,
// memory blocks, devices, the in-tree ABI) are package sysfs.
//
// Every strategy shares one data structure: children, identities and
// attributes are immutable values replaced copy-on-write and published
// through atomic pointers (docs/design.md, "Node layout"). The strategy
// is therefore the only variable.
//
// Lock ordering (outer to inner):
//
//	Tree write side (Strategy.Lock): every change to children, identity,
//	revisions and activation, and to attributes unless the strategy has
//	an attribute lock
//	  Tree.drainMu: guards nothing but the drain condition variable
//	Tree read side (Strategy.RLock): Lookup, Revalidate, Readdir, and
//	Permission and Getattr unless the strategy has an attribute lock;
//	never held while taking the write side. Under
//	Traits.LocklessRevalidate (kernfs74) Revalidate takes no lock, and
//	under Traits.ReaddirPerEntry Readdir takes it once per entry
//	  Attribute lock, read side (locking.AttrLocker, under
//	  Traits.SeparateAttrLock only: MayCreate's and MayDelete's checks
//	  after their lookup)
//	  Walker dcache bucket mutex (dentry insert/replace only)
//	  Walker inode-attribute lock (WalkerOptions.RefWalk only, where the
//	  strategy has no attribute lock; read side only, around one inode
//	  refresh; nothing is taken inside it)
//	Attribute lock (locking.AttrLocker, Traits.SeparateAttrLock only),
//	taken alone: its read side by Permission, Getattr, open's permission
//	check and the walker's permission checks and inode refreshes, its
//	write side by Setattr; nothing is taken inside it
//	Open-file lock (locking.OpenFileLocker, Traits.OpenFileLocks only):
//	taken alone, by Open and Release, around nothing
//	Tree.subMu: taken alone, by Subscribe and its cancel, around nothing
//
// Nothing calls out (Show, Store, subscribers, output) while holding the
// tree's lock: reads and writes hold only an active reference on their node,
// and subscribers are told after the writer has released the lock.
//
// Errors are *fs.PathError values wrapping fs.ErrNotExist, fs.ErrPermission,
// fs.ErrExist or a syscall.Errno (ENODEV for a removed node, ENOTDIR, ...);
// syscall.Errno values compare equal to those fs errors with errors.Is.
package kernfsim
