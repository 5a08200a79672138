package kernfsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// treeChecks is the table every strategy that accepts writers runs.
var treeChecks = []struct {
	name string
	run  func(t *testing.T, tr *Tree)
}{
	{"AddLookup", checkAddLookup},
	{"NameValidation", checkNameValidation},
	{"RemoveSubtree", checkRemoveSubtree},
	{"RemoveDrainsReads", checkRemoveDrainsReads},
	{"RemoveSelfFromStore", checkRemoveSelfFromStore},
	{"Revalidate", checkRevalidate},
	{"Rename", checkRename},
	{"ReaddirStableOffsets", checkReaddirStableOffsets},
	{"Setattr", checkSetattr},
	{"OpenReadWrite", checkOpenReadWrite},
	{"SubscribersAfterUnlock", checkSubscribersAfterUnlock},
	{"Nlink", checkNlink},
	{"AddBatch", checkAddBatch},
}

func TestTree(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		for _, c := range treeChecks {
			t.Run(c.name, func(t *testing.T) { c.run(t, newTestTree(t, lock)) })
		}
	})
}

func checkAddLookup(t *testing.T, tr *Tree) {
	cpu := mkpath(t, tr, "devices", "system", "cpu")
	f := testkit.Must(tr.AddAttr(cpu, "online", 0o444, Static("0-1\n")))(t)
	if got := testkit.Must(tr.Lookup(cpu, "online"))(t); got != f {
		t.Fatalf("Lookup returned %p, want %p", got, f)
	}
	_, err := tr.AddAttr(cpu, "online", 0o444, Static("x"))
	testkit.WantErrno(t, err, syscall.EEXIST)
	_, err = tr.Lookup(cpu, "offline")
	testkit.WantErrno(t, err, syscall.ENOENT)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing lookup: got %v, want it to match fs.ErrNotExist", err)
	}
	_, err = tr.Lookup(f, "x")
	testkit.WantErrno(t, err, syscall.ENOTDIR)
	_, err = tr.Mkdir(f, "x", 0o755)
	testkit.WantErrno(t, err, syscall.ENOTDIR)
	if got, want := f.Path(), "devices/system/cpu/online"; got != want {
		t.Fatalf("Path: got %q, want %q", got, want)
	}
	if got, want := tr.Nodes(), int64(5); got != want {
		t.Fatalf("Nodes: got %d, want %d", got, want)
	}
}

func checkNameValidation(t *testing.T, tr *Tree) {
	for _, c := range []struct {
		name string
		want syscall.Errno
	}{
		{"", syscall.EINVAL}, {".", syscall.EINVAL}, {"..", syscall.EINVAL},
		{"a/b", syscall.EINVAL}, {"a\x00b", syscall.EINVAL}, {"a\nb", syscall.EINVAL},
		{strings.Repeat("x", 256), syscall.ENAMETOOLONG},
	} {
		_, err := tr.Mkdir(tr.Root(), c.name, 0o755)
		testkit.WantErrno(t, err, c.want)
	}
	testkit.Must(tr.Mkdir(tr.Root(), strings.Repeat("x", 255), 0o755))(t)
	if got := tr.Nodes(); got != 2 {
		t.Fatalf("Nodes after rejected adds: got %d, want 2", got)
	}
}

func checkRemoveSubtree(t *testing.T, tr *Tree) {
	dev := mkpath(t, tr, "devices", "kernfsim", "dev0")
	attr := testkit.Must(tr.AddAttr(dev, "value", 0o644, NewValue("1\n")))(t)
	parent := dev.Parent()
	f := testkit.Must(tr.Open(attr, os.O_RDONLY, RootCred))(t)
	defer f.Release()
	rev := testkit.Must(tr.LookupRevOnly(parent, "dev0"))(t)
	require.NoError(t, tr.Remove(context.Background(), dev))
	if _, err := f.Read(make([]byte, 8), 0); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("read of removed attribute: got %v, want ENODEV", err)
	}
	_, err := tr.Open(attr, os.O_RDONLY, RootCred)
	testkit.WantErrno(t, err, syscall.ENODEV)
	_, err = tr.Lookup(parent, "dev0")
	testkit.WantErrno(t, err, syscall.ENOENT)
	if tr.Revalidate(parent, "dev0", nil, rev) {
		t.Fatal("negative entry from before the removal still valid: revision not bumped")
	}
	testkit.WantErrno(t, tr.Remove(context.Background(), dev), syscall.ENOENT)
	testkit.WantErrno(t, tr.Remove(context.Background(), tr.Root()), syscall.EBUSY)
	if got := tr.Nodes(); got != 3 {
		t.Fatalf("Nodes after removing a 2-node subtree: got %d, want 3", got)
	}
	testkit.Must(tr.Mkdir(parent, "dev0", 0o755))(t) // the name is free again
}

// LookupRevOnly returns only the revision a lookup saw (for tests).
func (t *Tree) LookupRevOnly(dir *Node, name string) (uint64, error) {
	_, rev, err := t.LookupRev(dir, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return rev, nil
}

// blockingSource is an attribute whose Show signals entry and then waits
// until released.
type blockingSource struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSource) Show(_ context.Context, buf *bytes.Buffer) error {
	b.entered <- struct{}{}
	<-b.release
	buf.WriteString("whole value\n")
	return nil
}

func checkRemoveDrainsReads(t *testing.T, tr *Tree) {
	src := &blockingSource{entered: make(chan struct{}), release: make(chan struct{})}
	n := testkit.Must(tr.AddAttr(tr.Root(), "slow", 0o444, src))(t)
	f := testkit.Must(tr.Open(n, os.O_RDONLY, RootCred))(t)
	defer f.Release()
	readDone := make(chan error)
	go func() {
		_, err := f.Read(make([]byte, 64), 0)
		readDone <- err
	}()
	<-src.entered
	removed := make(chan error)
	go func() { removed <- tr.Remove(context.Background(), n) }()
	// Remove must wait for the read. It may only finish after release, so
	// whichever of the two channels is ready first must be readDone.
	for n.IsActive() {
		// Wait until Remove has deactivated the node; the read still holds
		// its active reference, so Remove is now draining.
		runtime.Gosched()
	}
	select {
	case err := <-removed:
		t.Fatalf("Remove returned (%v) while a read was in flight", err)
	default:
	}
	close(src.release)
	if err := <-readDone; err != nil {
		t.Fatalf("in-flight read: got %v, want a whole value", err)
	}
	require.NoError(t, <-removed)
}

// selfRemover removes its own node when "remove" is stored.
type selfRemover struct {
	tr   *Tree
	node *Node
}

func (s *selfRemover) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.WriteString("x\n")
	return nil
}

func (s *selfRemover) Store(ctx context.Context, data []byte) error {
	if string(data) == "remove" {
		return s.tr.Remove(ctx, s.node.Parent())
	}
	return nil
}

func checkRemoveSelfFromStore(t *testing.T, tr *Tree) {
	dir := mkpath(t, tr, "dev")
	src := &selfRemover{tr: tr}
	src.node = testkit.Must(tr.AddAttr(dir, "delete", 0o200, src))(t)
	f := testkit.Must(tr.Open(src.node, os.O_WRONLY, RootCred))(t)
	defer f.Release()
	testkit.Must(f.Write(context.Background(), []byte("remove")))(t)
	if dir.IsActive() || src.node.IsActive() {
		t.Fatal("store removed its own directory but nodes are still active")
	}
	if got := src.node.active.Load(); got != deactivatedBias {
		t.Fatalf("active count after remove-self: got %d, want the bias %d (no reference leaked)", got, deactivatedBias)
	}
}

func checkRevalidate(t *testing.T, tr *Tree) {
	d := mkpath(t, tr, "class")
	n := testkit.Must(tr.Mkdir(d, "net", 0o755))(t)
	if !tr.Revalidate(d, "net", n, 0) {
		t.Fatal("positive entry of a live node: got invalid")
	}
	_, rev, err := tr.LookupRev(d, "block")
	testkit.WantErrno(t, err, syscall.ENOENT)
	if !tr.Revalidate(d, "block", nil, rev) {
		t.Fatal("negative entry with no change since: got invalid")
	}
	testkit.Must(tr.Mkdir(d, "block", 0o755))(t)
	if tr.Revalidate(d, "block", nil, rev) {
		t.Fatal("negative entry survived the creation of its name")
	}
	if tr.Revalidate(d, "other", n, 0) {
		t.Fatal("positive entry under another name: got valid")
	}
}

func checkRename(t *testing.T, tr *Tree) {
	a, b := mkpath(t, tr, "a"), mkpath(t, tr, "b")
	n := testkit.Must(tr.Mkdir(a, "x", 0o755))(t)
	testkit.Must(tr.Mkdir(b, "taken", 0o755))(t)
	testkit.WantErrno(t, tr.Rename(n, b, "taken"), syscall.EEXIST)
	testkit.WantErrno(t, tr.Rename(a, n, "loop"), syscall.EINVAL)
	testkit.WantErrno(t, tr.Rename(n, b, "bad/name"), syscall.EINVAL)
	require.NoError(t, tr.Rename(n, b, "y"))
	if tr.Revalidate(a, "x", n, 0) {
		t.Fatal("old name still revalidates after rename")
	}
	if got := testkit.Must(tr.Lookup(b, "y"))(t); got != n {
		t.Fatal("renamed node not found under its new name")
	}
	_, err := tr.Lookup(a, "x")
	testkit.WantErrno(t, err, syscall.ENOENT)
	if got, want := a.dir().subdirs.Load(), int32(0); got != want {
		t.Fatalf("old parent subdirs: got %d, want %d", got, want)
	}
	if got, want := tr.Nodes(), int64(5); got != want {
		t.Fatalf("Nodes: got %d, want %d", got, want)
	}
}

func checkReaddirStableOffsets(t *testing.T, tr *Tree) {
	dir := mkpath(t, tr, "memory")
	for i := range 50 {
		testkit.Must(tr.Mkdir(dir, "memory"+strconv.Itoa(i), 0o755))(t)
	}
	var seen []string
	var off uint64
	// Read 10 at a time, adding and removing other names between batches:
	// every name present throughout must be listed exactly once.
	for batch := 0; ; batch++ {
		got := 0
		require.NoError(t, tr.Readdir(dir, off, func(e Dirent) bool {
			seen = append(seen, e.Name)
			off = e.Off
			got++
			return got < 10
		}))
		if got == 0 {
			break
		}
		testkit.Must(tr.Mkdir(dir, "new"+strconv.Itoa(batch), 0o755))(t)
		if n, err := tr.Lookup(dir, "new"+strconv.Itoa(batch-1)); err == nil {
			require.NoError(t, tr.Remove(context.Background(), n))
		}
	}
	count := map[string]int{}
	for _, s := range seen {
		count[s]++
	}
	for i := range 50 {
		if c := count["memory"+strconv.Itoa(i)]; c != 1 {
			t.Fatalf("memory%d listed %d times, want once", i, c)
		}
	}
}

func checkSetattr(t *testing.T, tr *Tree) {
	n := testkit.Must(tr.Add(tr.Root(), "f", NodeSpec{Kind: KindAttr, Mode: 0o644, Uid: 1000, Source: NewValue("")}))(t)
	user, other := Cred{Uid: 1000, Gid: 1000}, Cred{Uid: 2000, Gid: 2000}
	testkit.WantErrno(t, tr.Setattr(n, SetattrArgs{Valid: SetUid, Uid: 0}, user), syscall.EPERM)
	testkit.WantErrno(t, tr.Setattr(n, SetattrArgs{Valid: SetMode, Mode: 0o600}, other), syscall.EPERM)
	testkit.WantErrno(t, tr.Setattr(n, SetattrArgs{Valid: SetSize}, other), syscall.EACCES)
	require.NoError(t, tr.Setattr(n, SetattrArgs{Valid: SetMode, Mode: 0o600}, user))
	require.NoError(t, tr.Setattr(n, SetattrArgs{Valid: SetSize}, user))
	require.NoError(t, tr.Setattr(n, SetattrArgs{Valid: SetUid | SetGid, Uid: 5, Gid: 6}, RootCred))
	st := tr.Getattr(n)
	if st.Mode != 0o600 || st.Uid != 5 || st.Gid != 6 || st.Size != PageSize {
		t.Fatalf("after setattr: got mode %o uid %d gid %d size %d, want 600 5 6 %d", st.Mode, st.Uid, st.Gid, st.Size, PageSize)
	}
	testkit.WantErrno(t, tr.Setattr(tr.Root(), SetattrArgs{Valid: SetSize}, RootCred), syscall.EISDIR)
}

func checkOpenReadWrite(t *testing.T, tr *Tree) {
	v := NewValue("1\n")
	n := testkit.Must(tr.AddAttr(tr.Root(), "value", 0o644, v))(t)
	ro := testkit.Must(tr.AddAttr(tr.Root(), "ro", 0o444, Static("r\n")))(t)
	wo := testkit.Must(tr.Add(tr.Root(), "wo", NodeSpec{Kind: KindAttr, Mode: 0o200, Source: Static("")}))(t)
	user := Cred{Uid: 1000, Gid: 1000}
	_, err := tr.Open(n, os.O_WRONLY, user)
	testkit.WantErrno(t, err, syscall.EACCES)
	_, err = tr.Open(ro, os.O_WRONLY, RootCred)
	testkit.WantErrno(t, err, syscall.EACCES) // no store: even root cannot write
	_, err = tr.Open(wo, os.O_RDONLY, user)
	testkit.WantErrno(t, err, syscall.EACCES)
	_, err = tr.Open(wo, os.O_RDONLY, RootCred)
	testkit.WantErrno(t, err, syscall.EACCES) // no read bit: kernfs refuses root too
	f := testkit.Must(tr.Open(n, os.O_RDWR, RootCred))(t)
	defer f.Release()
	testkit.Must(f.Write(context.Background(), []byte("42\n")))(t)
	_, err = f.Write(context.Background(), make([]byte, PageSize+1))
	testkit.WantErrno(t, err, syscall.EINVAL)
	buf := make([]byte, 2)
	if k := testkit.Must(f.Read(buf, 0))(t); string(buf[:k]) != "42" {
		t.Fatalf("first read: got %q, want %q", buf[:k], "42")
	}
	v.Store(context.Background(), []byte("changed"))
	if k := testkit.Must(f.Read(buf, 2))(t); string(buf[:k]) != "\n" {
		t.Fatalf("read at offset 2 must continue the same snapshot: got %q", buf[:k])
	}
	if _, err := f.Read(buf, 3); err != io.EOF {
		t.Fatalf("read past the snapshot: got %v, want EOF", err)
	}
	_, err = tr.Open(tr.Root(), os.O_WRONLY, RootCred)
	testkit.WantErrno(t, err, syscall.EISDIR)
}

func checkSubscribersAfterUnlock(t *testing.T, tr *Tree) {
	var got []string
	cancel := tr.Subscribe(func(ev Event) {
		// Taking the read side would deadlock under mutex or rwsem if the
		// writer still held its lock.
		_, err := tr.Lookup(ev.Parent, ev.Name)
		got = append(got, ev.Op.String()+" "+ev.Name+" "+errnoName(err))
	})
	d := testkit.Must(tr.Mkdir(tr.Root(), "d", 0o755))(t)
	require.NoError(t, tr.Rename(d, tr.Root(), "e"))
	require.NoError(t, tr.Setattr(d, SetattrArgs{Valid: SetMode, Mode: 0o700}, RootCred))
	require.NoError(t, tr.Remove(context.Background(), d))
	cancel()
	testkit.Must(tr.Mkdir(tr.Root(), "after-cancel", 0o755))(t)
	want := "add d ok|rename e ok|setattr e ok|remove e ENOENT"
	if g := strings.Join(got, "|"); g != want {
		t.Fatalf("events: got %q, want %q", g, want)
	}
}

func checkNlink(t *testing.T, tr *Tree) {
	d := mkpath(t, tr, "d")
	testkit.Must(tr.Mkdir(d, "a", 0o755))(t)
	testkit.Must(tr.Mkdir(d, "b", 0o755))(t)
	testkit.Must(tr.AddAttr(d, "f", 0o444, Static("")))(t)
	if got := tr.Getattr(d).Nlink; got != 4 {
		t.Fatalf("nlink of a dir with 2 subdirs: got %d, want 4", got)
	}
}

// errnoName is "ok" for nil, the errno's name for an errno, else the error.
func errnoName(err error) string {
	var e syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &e):
		return ErrnoName(e)
	}
	return err.Error()
}

func TestPermission(t *testing.T) {
	a := &Attr{Mode: 0o640, Uid: 1000, Gid: 100}
	for _, c := range []struct {
		cred  Cred
		mask  Access
		isDir bool
		mode  fs.FileMode
		want  bool
	}{
		{Cred{Uid: 1000}, MayRead | MayWrite, false, 0o640, true},
		{Cred{Uid: 1000}, MayExec, false, 0o640, false},
		{Cred{Uid: 2000, Gid: 100}, MayRead, false, 0o640, true},
		{Cred{Uid: 2000, Gid: 100}, MayWrite, false, 0o640, false},
		{Cred{Uid: 2000, Gid: 7, Groups: []uint32{100}}, MayRead, false, 0o640, true},
		{Cred{Uid: 2000, Gid: 7}, MayRead, false, 0o640, false},
		{Cred{Uid: 2000, Gid: 7}, MayRead, false, 0o644, true},
		{Cred{Uid: 1000}, MayRead, false, 0o044, false}, // owner class decides, as the kernel
		{RootCred, MayRead | MayWrite, false, 0o000, true},
		{RootCred, MayExec, false, 0o644, false},
		{RootCred, MayExec, false, 0o744, true},
		{RootCred, MayExec, true, 0o000, true},
	} {
		a.Mode = c.mode
		if got := permitted(a, c.isDir, c.mask, c.cred) == 0; got != c.want {
			t.Errorf("permitted(mode %o, dir %v, mask %d, %+v): got %v, want %v", c.mode, c.isDir, c.mask, c.cred, got, c.want)
		}
	}
}

func TestNoneRefusesWritersOnceSealed(t *testing.T) {
	tr := newTestTree(t, "none")
	d := testkit.Must(tr.Mkdir(tr.Root(), "built", 0o755))(t)
	tr.Seal()
	_, err := tr.Mkdir(tr.Root(), "late", 0o755)
	if !errors.Is(err, locking.ErrReadOnly) {
		t.Fatalf("add after seal under none: got %v, want ErrReadOnly", err)
	}
	if err := tr.Remove(context.Background(), d); !errors.Is(err, locking.ErrReadOnly) {
		t.Fatalf("remove after seal under none: got %v, want ErrReadOnly", err)
	}
	if got := testkit.Must(tr.Lookup(tr.Root(), "built"))(t); got != d {
		t.Fatal("lookup after refused writes: lost the node")
	}
}

func TestUnknownStrategy(t *testing.T) {
	_, err := locking.New("spinlock", locking.Options{})
	if err == nil || !strings.Contains(err.Error(), "mutex, rwsem, rcu, none") {
		t.Fatalf("got %v, want an error listing the valid strategies", err)
	}
}

func checkAddBatch(t *testing.T, tr *Tree) {
	mem := mkpath(t, tr, "memory")
	var events int
	defer tr.Subscribe(func(Event) { events++ })()
	batch := func(names ...string) []BatchEntry {
		var es []BatchEntry
		for _, n := range names {
			es = append(es, BatchEntry{Name: n, Spec: NodeSpec{Kind: KindDir}})
		}
		return es
	}
	nodes := testkit.Must(tr.AddBatch(mem, batch("memory0", "memory1", "memory2")))(t)
	_, err := tr.AddBatch(mem, batch("memory3", "memory1"))
	testkit.WantErrno(t, err, syscall.EEXIST)
	_, err = tr.AddBatch(mem, batch("memory4", "memory4"))
	testkit.WantErrno(t, err, syscall.EEXIST)
	_, err = tr.AddBatch(mem, batch("memory5", "bad/name"))
	testkit.WantErrno(t, err, syscall.EINVAL)
	prefix := []*Node{mem}
	appended, err := tr.AppendBatch(prefix, mem, batch("memory7", "memory1"))
	testkit.WantErrno(t, err, syscall.EEXIST)
	if len(appended) != 1 || appended[0] != mem {
		t.Fatalf("AppendBatch failing gave %d nodes, want the 1 it was given", len(appended))
	}
	appended = testkit.Must(tr.AppendBatch(prefix, mem, batch("memory6")))(t) // merged into a non-empty directory
	if len(appended) != 2 || appended[0] != mem || appended[1].Name() != "memory6" {
		t.Fatalf("AppendBatch gave %d nodes, want the 1 it was given and memory6", len(appended))
	}
	var names []string
	require.NoError(t, tr.Readdir(mem, 0, func(e Dirent) bool { names = append(names, e.Name); return true }))
	slices.Sort(names)
	if got, want := strings.Join(names, ","), "memory0,memory1,memory2,memory6"; got != want {
		t.Fatalf("after batches with errors: got %s, want %s (all or nothing)", got, want)
	}
	if got := testkit.Must(tr.Lookup(mem, "memory1"))(t); got != nodes[1] {
		t.Fatal("lookup of a batch-added node returned another node")
	}
	if events != 4 || tr.Getattr(mem).Nlink != 6 || tr.Nodes() != 6 {
		t.Fatalf("got %d events, nlink %d, %d nodes; want 4, 6, 6", events, tr.Getattr(mem).Nlink, tr.Nodes())
	}
}
