package kernfsim

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Source is an attribute's contents: Show writes the current value (at
// most PageSize bytes are kept, as sysfs's one-page buffer).
type Source interface {
	Show(ctx context.Context, buf *bytes.Buffer) error
}

// Storer is a Source that accepts writes. Store gets the whole write (at
// most PageSize bytes). To remove its own node it passes ctx to Tree.Remove.
type Storer interface {
	Store(ctx context.Context, data []byte) error
}

// Static is a read-only attribute with fixed contents.
type Static string

func (s Static) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.WriteString(string(s))
	return nil
}

// Value is a writable attribute holding the last value stored (initially
// the value given to NewValue).
type Value struct {
	v atomic.Pointer[string]
}

// NewValue returns a Value holding s.
func NewValue(s string) *Value {
	v := &Value{}
	v.v.Store(&s)
	return v
}

func (v *Value) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.WriteString(*v.v.Load())
	return nil
}

// Len is the length of the value held.
func (v *Value) Len() int { return len(*v.v.Load()) }

func (v *Value) Store(_ context.Context, data []byte) error {
	s := string(data)
	v.v.Store(&s)
	return nil
}

// Func is a dynamic attribute: Show calls the function each time, except
// while the tree is frozen (Tree.Freeze), when it repeats the last value.
type Func struct {
	fn   func() string
	last atomic.Pointer[string]
}

// NewFunc returns a dynamic attribute computed by fn.
func NewFunc(fn func() string) *Func { return &Func{fn: fn} }

func (f *Func) Show(ctx context.Context, buf *bytes.Buffer) error {
	if last := f.last.Load(); last != nil && isFrozen(ctx) {
		buf.WriteString(*last)
		return nil
	}
	s := f.fn()
	f.last.Store(&s)
	buf.WriteString(s)
	return nil
}

type treeKey struct{}

func isFrozen(ctx context.Context) bool {
	t, _ := ctx.Value(treeKey{}).(*Tree)
	return t != nil && t.frozen.Load()
}

// File is an open node (kernfs_open_file). Reads take an active reference
// for their duration, so they fail with ENODEV once the node is removed.
// A File is used by one goroutine at a time.
//
// A File and its show() buffer each take whole cache lines, as the
// kernel's struct file comes from a cache-aligned slab and seq_file's
// buffer is a page of its own: two CPUs reading their own files write no
// line in common. Small Files from one allocation would span shared
// lines (BenchmarkWalk, lock=rcu/op=files/parallel;
// docs/notes/2026-12-01-walker-scaling.md).
type File struct {
	fileState
	_ [cacheLine - unsafe.Sizeof(fileState{})%cacheLine]byte
}

type fileState struct {
	t     *Tree
	n     *Node
	flags int
	buf   bytes.Buffer // the show() snapshot, taken by a read at offset 0
	shown bool
}

// fileBufSize is a new File's show() buffer: a size class whose objects
// start on a cache line, as every larger one the buffer grows into.
const fileBufSize = 2 * cacheLine

var filePool = sync.Pool{New: func() any {
	f := new(File)
	f.buf = *bytes.NewBuffer(make([]byte, 0, fileBufSize))
	return f
}}

// Open opens n with os.O_RDONLY, O_WRONLY or O_RDWR for c, checking
// permission as may_open does: EACCES without permission or when the
// attribute's mode has no read (write) bit at all or it cannot store, as
// kernfs_fop_open refuses even root, EISDIR for writing a
// directory, ELOOP for a symlink, ENODEV if n was removed.
func (t *Tree) Open(n *Node, flags int, c Cred) (*File, error) {
	f, e := t.open(n, flags, c)
	if e != 0 {
		return nil, &fs.PathError{Op: "open", Path: n.Path(), Err: e}
	}
	return f, nil
}

// open is Open returning an errno.
func (t *Tree) open(n *Node, flags int, c Cred) (*File, syscall.Errno) {
	if e := t.mayOpen(n, flags, c); e != 0 {
		return nil, e
	}
	f := filePool.Get().(*File)
	f.t, f.n, f.flags, f.shown = t, n, flags, false
	t.openFileLock(n) // kernfs_get_open_node
	return f, 0
}

// openFileLock takes and releases n's open-file lock, where the strategy
// has open-file locks (kernfs from 6.0): kernfs_get_open_node takes it on
// open, kernfs_unlink_open_file on release, to link or unlink the file in
// the node's list of open files. kernfsim keeps no such list (nothing
// would read it: it has no poll and no mmap to drain), so nothing is done
// under the lock; what is modelled is the acquisition and the line it
// writes, which is what the hashed mutexes changed from one global
// kernfs_open_file_mutex.
func (t *Tree) openFileLock(n *Node) {
	if t.files != nil {
		t.files.OpenFileLock(n.ino)
		t.files.OpenFileUnlock(n.ino)
	}
}

// OpenAccess is the access an open with flags (os.O_RDONLY, O_WRONLY or
// O_RDWR) asks for.
func OpenAccess(flags int) Access {
	switch flags & (os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		return MayRead
	case os.O_WRONLY:
		return MayWrite
	}
	return MayRead | MayWrite
}

func (t *Tree) mayOpen(n *Node, flags int, c Cred) syscall.Errno {
	mask := OpenAccess(flags)
	switch {
	case n.kind == KindSymlink:
		return syscall.ELOOP
	case n.kind == KindDir && mask&MayWrite != 0:
		return syscall.EISDIR
	}
	r := t.rlockAttrs()
	e := permissionLocked(n, mask, c)
	t.runlockAttrs(r)
	if e != 0 {
		return e
	}
	if !n.tryGetActive() {
		return syscall.ENODEV
	}
	defer t.putActive(n)
	return attrOpenable(n, mask)
}

// attrOpenable is kernfs_fop_open's own check, which applies to root too:
// reading needs a read bit in the mode, writing a write bit and a store.
func attrOpenable(n *Node, mask Access) syscall.Errno {
	if n.kind != KindAttr {
		return 0
	}
	mode := n.attr.Load().Mode
	_, canStore := n.ext.(Storer)
	switch {
	case mask&MayRead != 0 && mode&0o444 == 0:
		return syscall.EACCES
	case mask&MayWrite != 0 && (mode&0o222 == 0 || !canStore):
		return syscall.EACCES
	}
	return 0
}

// Node is the open node.
func (f *File) Node() *Node { return f.n }

// Read reads the show() snapshot at off. A read at offset 0 takes a fresh
// snapshot, as seq_file does; later offsets read the same snapshot, so a
// reader sees one whole value.
func (f *File) Read(p []byte, off int64) (int, error) {
	return f.ReadInterruptible(nil, p, off)
}

// ReadInterruptible is Read whose Show sees a ctx that is done once
// interrupt is closed (a FUSE INTERRUPT: the client got a signal). A Show
// that watches its ctx then returns and the read fails with EINTR; a Show
// that ignores it keeps its node's removal waiting until it returns, as a
// hung show() blocks kernfs_remove in Linux.
func (f *File) ReadInterruptible(interrupt <-chan struct{}, p []byte, off int64) (int, error) {
	if f.n.kind != KindAttr {
		return 0, &fs.PathError{Op: "read", Path: f.n.Path(), Err: syscall.EISDIR}
	}
	if f.flags&(os.O_WRONLY|os.O_RDWR) == os.O_WRONLY {
		return 0, &fs.PathError{Op: "read", Path: f.n.Path(), Err: syscall.EBADF}
	}
	if !f.n.tryGetActive() {
		return 0, &fs.PathError{Op: "read", Path: f.n.Path(), Err: syscall.ENODEV}
	}
	defer f.t.putActive(f.n)
	if off == 0 || !f.shown {
		f.buf.Reset()
		ctx := f.t.readCtx
		if interrupt != nil {
			ctx = interruptCtx{Context: ctx, done: interrupt}
		}
		if err := f.n.Source().Show(ctx, &f.buf); err != nil {
			f.shown = false
			if ctx.Err() != nil {
				err = syscall.EINTR
			}
			return 0, &fs.PathError{Op: "read", Path: f.n.Path(), Err: err}
		}
		f.buf.Truncate(min(f.buf.Len(), PageSize))
		f.shown = true
	}
	if off >= int64(f.buf.Len()) {
		return 0, io.EOF
	}
	return copy(p, f.buf.Bytes()[off:]), nil
}

// Write passes p whole to the attribute's Store: EINVAL over PageSize
// bytes (a sysfs store takes one page), ENODEV once the node is removed,
// and Store's own error otherwise.
func (f *File) Write(ctx context.Context, p []byte) (int, error) {
	fail := func(e error) (int, error) { return 0, &fs.PathError{Op: "write", Path: f.n.Path(), Err: e} }
	st, ok := f.n.ext.(Storer)
	switch {
	case f.flags&(os.O_WRONLY|os.O_RDWR) == 0 || !ok:
		return fail(syscall.EBADF)
	case len(p) > PageSize:
		return fail(syscall.EINVAL)
	case !f.n.tryGetActive():
		return fail(syscall.ENODEV)
	}
	held := &heldRef{node: f.n}
	err := st.Store(context.WithValue(ctx, heldRefKey{}, held), p)
	if !held.released {
		f.t.putActive(f.n)
	}
	if err != nil {
		return fail(err)
	}
	return len(p), nil
}

// Release closes f. It must not be used afterwards.
func (f *File) Release() {
	f.t.openFileLock(f.n) // kernfs_unlink_open_file
	f.fileState = fileState{buf: f.buf}
	f.buf.Reset()
	filePool.Put(f)
}

// heldRef records the active reference a Store call runs under, so Remove
// can give it up when the store removes its own node.
type heldRef struct {
	node     *Node
	released bool // set by the Store's goroutine only
}

type heldRefKey struct{}

// StoringNode is the node whose Store was given ctx, or nil if ctx is not a
// Store's: a store handler that adds beside its own node finds it so.
func StoringNode(ctx context.Context) *Node {
	h, _ := ctx.Value(heldRefKey{}).(*heldRef)
	if h == nil {
		return nil
	}
	return h.node
}

// breakActiveProtection drops the active reference ctx's Store holds if its
// node is inside the subtree at top, so the removal's drain does
// not wait for the caller itself (kernfs_break_active_protection).
func breakActiveProtection(ctx context.Context, t *Tree, top *Node) {
	if ctx == nil {
		return
	}
	h, _ := ctx.Value(heldRefKey{}).(*heldRef)
	if h == nil || h.released {
		return
	}
	for p := h.node; p != nil; p = p.Parent() {
		if p == top {
			t.putActive(h.node)
			h.released = true
			return
		}
	}
}

// interruptCtx is the tree's read context, done when done is closed.
type interruptCtx struct {
	context.Context
	done <-chan struct{}
}

func (c interruptCtx) Done() <-chan struct{} { return c.done }

func (c interruptCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}
