// Package kernfsim is a kernfs-like tree (the filesystem core behind Linux
// sysfs) whose lookup, revalidate, permission and write paths run under a
// chosen locking.Strategy, and an in-process walker that resolves paths the
// way the kernel's path walk does. It knows nothing of what it serves: the
// sysfs contents (CPUs, memory blocks, devices, the in-tree ABI) are
// package sysfs.
//
// The data structures are the same under every strategy: each directory's
// children are a persistent (copy-on-write) treap ordered by name hash and
// published through an atomic pointer; each node's identity (parent, name)
// and attributes are immutable values published the same way. The strategy
// is therefore the only variable: mutex and rwsem readers take the lock as
// kernfs did, rcu readers only mark a grace-period shard, none takes nothing.
//
// Lock ordering (outer to inner):
//
//	Tree write side (Strategy.Lock): every change to children, identity,
//	attributes, revisions and activation
//	  Tree.drainMu: guards nothing but the drain condition variable
//	Tree read side (Strategy.RLock): Lookup, Revalidate, Permission,
//	Getattr, Readdir; never held while taking the write side
//	  Walker dcache bucket mutex (dentry insert/replace only)
//	  Walker inode-attribute lock (WalkerOptions.RefWalk only; read side
//	  only, around one inode refresh; nothing is taken inside it)
//
// Nothing calls out (Show, Store, subscribers, output) while holding the
// tree's lock: reads and writes hold only an active reference on their node,
// and subscribers are told after the writer has released the lock.
//
// Errors are *fs.PathError values wrapping fs.ErrNotExist, fs.ErrPermission,
// fs.ErrExist or a syscall.Errno (ENODEV for a removed node, ENOTDIR, ...);
// syscall.Errno values compare equal to those fs errors with errors.Is.
package kernfsim
