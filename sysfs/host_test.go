package sysfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// hostFile is one entry of a fake host tree: a directory, a regular file
// or a symlink (a target).
type hostFile struct {
	path   string
	mode   fs.FileMode
	data   string
	target string
	dir    bool
}

// fakeHost is a small sysfs-like directory tree, declared as data.
var fakeHost = []hostFile{
	{path: "devices", mode: 0o755, dir: true},
	{path: "devices/system", mode: 0o555, dir: true},
	{path: "devices/system/cpu", mode: 0o755, dir: true},
	{path: "devices/system/cpu/online", mode: 0o444, data: "0-1\n"},
	{path: "devices/system/cpu/cpu1/online", mode: 0o644, data: "1\n"},
	{path: "devices/system/cpu/cpu1/topology/core_id", mode: 0o444, data: "1\n"},
	{path: "devices/pci0000:00/0000:00:02.0/config", mode: 0o644, data: "\x86\x80\x00\x00binary\x00bytes"},
	{path: "devices/pci0000:00/0000:00:02.0/rescan", mode: 0o200},
	{path: "devices/pci0000:00/0000:00:02.0/secret", mode: 0o400, data: "root only\n"},
	{path: "devices/pci0000:00/0000:00:02.0/nothing", mode: 0o000},
	{path: "devices/pci0000:00/0000:00:02.0/vpd", mode: 0o600, data: "never read"},
	{path: "firmware/acpi/tables/DSDT", mode: 0o400, data: strings.Repeat("x", kernfsim.PageSize+100)},
	{path: "class/net/eth0", target: "../../devices/pci0000:00/0000:00:02.0/net/eth0"},
	{path: "bus/cpu/devices/cpu1", target: "/sys/devices/system/cpu/cpu1"},
	{path: "dangling", target: "no/such/thing"},
	{path: "kernel/mm/private", mode: 0o700, dir: true},
}

// makeHost writes files under a fresh directory and returns it.
func makeHost(t *testing.T, files []hostFile) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f.path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case f.target != "":
			require.NoError(t, os.Symlink(f.target, p))
		case f.dir:
			require.NoError(t, os.MkdirAll(p, 0o755))
			require.NoError(t, os.Chmod(p, f.mode))
		default:
			require.NoError(t, os.WriteFile(p, []byte(f.data), 0o600))
			require.NoError(t, os.Chmod(p, f.mode))
		}
	}
	return root
}

// mirrorTest mirrors dir into a fresh tree under lock.
func mirrorTest(t *testing.T, lock, dir string, opts MirrorOptions) (*kernfsim.Tree, MirrorReport) {
	t.Helper()
	tr := testtree.New(t, lock)
	rep, err := MirrorHost(tr, dir, opts)
	require.NoError(t, err)
	return tr, rep
}

// readMirrored reads path from tr as root: its contents, or the errno
// the open or the read failed with.
func readMirrored(t *testing.T, tr *kernfsim.Tree, path string) (string, syscall.Errno) {
	t.Helper()
	n := testkit.Must(kernfsim.NewWalker(tr, kernfsim.WalkerOptions{}).Lresolve(kernfsim.RootCred, path))(t)
	f, err := tr.Open(n, os.O_RDONLY, kernfsim.RootCred)
	if err != nil {
		return "", kernfsim.Errno(err)
	}
	defer f.Release()
	var out []byte
	buf := make([]byte, 1000)
	for off := int64(0); ; {
		k, err := f.Read(buf, off)
		if err == io.EOF {
			return string(out), 0
		}
		if err != nil {
			return "", kernfsim.Errno(err)
		}
		out, off = append(out, buf[:k]...), off+int64(k)
	}
}

func TestMirrorHostModesContentsLinks(t *testing.T) {
	dir := makeHost(t, fakeHost)
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr, _ := mirrorTest(t, lock, dir, MirrorOptions{})
		w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
		for _, f := range fakeHost {
			n := testkit.Must(w.Lresolve(kernfsim.RootCred, f.path))(t)
			st := tr.Getattr(n)
			wantMode := f.mode
			if f.target != "" {
				wantMode = 0o777
			}
			if st.Mode != wantMode {
				t.Errorf("%s: got mode %04o, want %04o", f.path, st.Mode, wantMode)
			}
			switch {
			case f.target != "":
				if n.Kind() != kernfsim.KindSymlink || n.Target() != f.target {
					t.Errorf("%s: got %v -> %q, want symlink -> %q", f.path, n.Kind(), n.Target(), f.target)
				}
			case n.Kind() == kernfsim.KindAttr && f.mode&0o444 != 0 && f.path != "devices/pci0000:00/0000:00:02.0/vpd":
				got, e := readMirrored(t, tr, f.path)
				if want := f.data[:min(len(f.data), kernfsim.PageSize)]; e != 0 || got != want {
					t.Errorf("%s: got %q (errno %v), want %q", f.path, head(got), e, head(want))
				}
			}
		}
	})
}

func head(s string) string { return s[:min(len(s), 40)] }

func TestMirrorHostRootTakesDirMode(t *testing.T) {
	dir := makeHost(t, fakeHost)
	require.NoError(t, os.Chmod(dir, 0o555))
	tr, _ := mirrorTest(t, "rwsem", dir, MirrorOptions{})
	if got := tr.Getattr(tr.Root()).Mode; got != 0o555 {
		t.Errorf("root mode: got %04o, want 0555", got)
	}
}

// TestMirrorHostUnreadable checks that what cannot be read fails through
// the tree as on the host: no read bit EACCES, the no-read list EIO.
func TestMirrorHostUnreadable(t *testing.T) {
	tr, rep := mirrorTest(t, "rcu", makeHost(t, fakeHost), MirrorOptions{})
	for _, tc := range []struct {
		path string
		want syscall.Errno
	}{
		{"devices/pci0000:00/0000:00:02.0/rescan", syscall.EACCES},
		{"devices/pci0000:00/0000:00:02.0/nothing", syscall.EACCES},
		{"devices/pci0000:00/0000:00:02.0/vpd", syscall.EIO},
	} {
		if _, e := readMirrored(t, tr, tc.path); e != tc.want {
			t.Errorf("read %s: got errno %v, want %v", tc.path, e, tc.want)
		}
	}
	if rep.NotRead != 2 || !slices.Equal(rep.NoRead, []string{"devices/pci0000:00/0000:00:02.0/vpd"}) {
		t.Errorf("got NotRead %d, NoRead %q; want 2 and the vpd file", rep.NotRead, rep.NoRead)
	}
}

// TestMirrorHostReadErrno checks that an attribute whose host read fails
// fails with the same errno, and that a write to a writable one is kept
// or accepted as sysfs would.
func TestMirrorHostReadErrno(t *testing.T) {
	dir := makeHost(t, fakeHost)
	defer swapRead(func(f *attrFile, max int) hostRead {
		switch f.name {
		case "core_id":
			return hostRead{errno: syscall.ENODATA}
		case "online":
			return hostRead{errno: syscall.EINVAL}
		}
		return readHostFile(f, max)
	})()
	tr, rep := mirrorTest(t, "rwsem", dir, MirrorOptions{})
	for _, tc := range []struct {
		path string
		want syscall.Errno
	}{
		{"devices/system/cpu/cpu1/topology/core_id", syscall.ENODATA},
		{"devices/system/cpu/online", syscall.EINVAL},
		{"devices/system/cpu/cpu1/online", syscall.EINVAL},
	} {
		if _, e := readMirrored(t, tr, tc.path); e != tc.want {
			t.Errorf("read %s: got errno %v, want %v", tc.path, e, tc.want)
		}
	}
	if rep.ReadErrors[syscall.ENODATA] != 1 || rep.ReadErrors[syscall.EINVAL] != 2 {
		t.Errorf("got ReadErrors %v, want 1 ENODATA, 2 EINVAL", rep.ReadErrors)
	}
	n := testkit.Must(kernfsim.NewWalker(tr, kernfsim.WalkerOptions{}).Resolve(kernfsim.RootCred, "devices/system/cpu/cpu1/online"))(t)
	if _, ok := n.Source().(kernfsim.Storer); !ok {
		t.Errorf("a writable attribute whose read failed does not accept stores")
	}
}

// swapRead replaces the host read for a test and returns the undo.
func swapRead(fn func(f *attrFile, max int) hostRead) func() {
	old := hostReadFile
	hostReadFile = fn
	return func() { hostReadFile = old }
}

func TestMirrorHostTimeout(t *testing.T) {
	dir := makeHost(t, fakeHost)
	release := make(chan struct{})
	defer close(release)
	defer swapRead(func(f *attrFile, max int) hostRead {
		if f.name == "core_id" {
			<-release // a read that hangs until the test ends
		}
		return readHostFile(f, max)
	})()
	start := time.Now()
	tr, rep := mirrorTest(t, "mutex", dir, MirrorOptions{ReadTimeout: 50 * time.Millisecond})
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("the load took %v with one read hanging; want about the 50ms timeout", el)
	}
	if want := []string{"devices/system/cpu/cpu1/topology/core_id"}; !slices.Equal(rep.TimedOut, want) {
		t.Errorf("got TimedOut %q, want %q", rep.TimedOut, want)
	}
	if _, e := readMirrored(t, tr, "devices/system/cpu/cpu1/topology/core_id"); e != syscall.ETIMEDOUT {
		t.Errorf("got errno %v, want ETIMEDOUT", e)
	}
}

func TestMirrorHostSizeCap(t *testing.T) {
	dir := makeHost(t, fakeHost)
	tr, rep := mirrorTest(t, "rwsem", dir, MirrorOptions{MaxFileSize: 8})
	got, _ := readMirrored(t, tr, "devices/pci0000:00/0000:00:02.0/config")
	if want := "\x86\x80\x00\x00bina"; got != want {
		t.Errorf("config: got %q, want the first 8 bytes %q", got, want)
	}
	want := []string{ // longer than 8 bytes
		"devices/pci0000:00/0000:00:02.0/config", "devices/pci0000:00/0000:00:02.0/secret", "firmware/acpi/tables/DSDT",
	}
	slices.Sort(rep.Truncated)
	if !slices.Equal(rep.Truncated, want) {
		t.Errorf("got Truncated %q, want %q", rep.Truncated, want)
	}
	_, rep = mirrorTest(t, "rwsem", dir, MirrorOptions{})
	if want := []string{"firmware/acpi/tables/DSDT"}; !slices.Equal(rep.Truncated, want) {
		t.Errorf("default cap: got Truncated %q, want %q", rep.Truncated, want)
	}
}

func TestMirrorHostCounts(t *testing.T) {
	dir := makeHost(t, fakeHost)
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	_, rep := mirrorTest(t, "rwsem", dir, MirrorOptions{})
	// devices, system, cpu, cpu1, topology, pci0000:00, 0000:00:02.0,
	// firmware, acpi, tables, class, net, bus, cpu, devices, kernel, mm, private
	if rep.Dirs != 18 || rep.Attrs != 9 || rep.Symlinks != 3 {
		t.Errorf("got %d dirs, %d attrs, %d symlinks; want 18, 9, 3", rep.Dirs, rep.Attrs, rep.Symlinks)
	}
	if want := []MirrorSkip{{"fifo", SkipFileType}}; !slices.Equal(rep.Skipped, want) {
		t.Errorf("got Skipped %v, want %v", rep.Skipped, want)
	}
	s := rep.String()
	for _, want := range []string{"18 directories, 9 attributes", "3 symlinks", "2 attributes have no read bit",
		"1 skipped (" + SkipFileType + "): fifo", "no-read list", "cut: firmware/acpi/tables/DSDT"} {
		if !strings.Contains(s, want) {
			t.Errorf("report %q does not say %q", s, want)
		}
	}
}

// TestMirrorHostMountPoint checks that another filesystem mounted inside
// the mirrored directory is added empty and reported.
func TestMirrorHostMountPoint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := makeHost(t, fakeHost)
	mnt := filepath.Join(dir, "kernel/mm/private")
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "inside"), []byte("x"), 0o644))
	tr, rep := mirrorTest(t, "rwsem", dir, MirrorOptions{})
	if want := []MirrorSkip{{"kernel/mm/private", SkipMountPoint}}; !slices.Equal(rep.Skipped, want) {
		t.Errorf("got Skipped %v, want %v", rep.Skipped, want)
	}
	if _, err := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{}).Resolve(kernfsim.RootCred, "kernel/mm/private/inside"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v for a file on the other filesystem, want ENOENT", err)
	}
}

func TestMirrorHostErrors(t *testing.T) {
	dir := makeHost(t, fakeHost)
	tr, _ := mirrorTest(t, "rwsem", dir, MirrorOptions{})
	if _, err := MirrorHost(tr, dir, MirrorOptions{}); err == nil {
		t.Error("mirroring into a non-empty tree: got no error")
	}
	_, err := MirrorHost(testtree.New(t, "rwsem"), filepath.Join(dir, "devices/system/cpu/online"), MirrorOptions{})
	testkit.WantErrno(t, err, syscall.ENOTDIR)
	_, err = MirrorHost(testtree.New(t, "rwsem"), filepath.Join(dir, "nosuch"), MirrorOptions{})
	testkit.WantErrno(t, err, syscall.ENOENT)
}

// TestMirrorHostSysfsErrnos mirrors a real sysfs directory (the loopback
// interface) and checks that every attribute fails through the tree when,
// and with the errno, it fails on the host (speed and duplex fail EINVAL
// on lo).
func TestMirrorHostSysfsErrnos(t *testing.T) {
	const lo = "/sys/devices/virtual/net/lo"
	if _, err := os.Stat(lo); err != nil {
		t.Skipf("no sysfs here: %v", err)
	}
	tr, rep := mirrorTest(t, "rcu", lo, MirrorOptions{})
	if len(rep.ReadErrors) == 0 {
		t.Errorf("no attribute of %s failed to read; expected speed and duplex to (report: %s)", lo, rep)
	}
	err := filepath.WalkDir(lo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info := testkit.Must(d.Info())(t)
		if info.Mode()&0o444 == 0 {
			return nil
		}
		_, hostErr := os.ReadFile(p)
		_, e := readMirrored(t, tr, strings.TrimPrefix(p, lo+"/"))
		if want := errnoOrZero(hostErr); e != want {
			t.Errorf("%s: mirror errno %v, host errno %v", p, e, want)
		}
		return nil
	})
	require.NoError(t, err)
}

func errnoOrZero(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return kernfsim.Errno(err)
}

func TestMatchTail(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"vpd", "devices/pci0000:00/0000:00:02.0/vpd", true},
		{"vpd", "vpd", true},
		{"vpd", "devices/vpd/x", false},
		{"zram-control/hot_add", "class/zram-control/hot_add", true},
		{"zram-control/hot_add", "hot_add", false},
		{"zram-control/hot_add", "class/other/hot_add", false},
		{"cpu*/online", "devices/system/cpu/cpu3/online", true},
	} {
		if got := matchTail([]string{tc.pattern}, tc.path); got != tc.want {
			t.Errorf("matchTail(%q, %q): got %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func ExampleMirrorHost() {
	dir, err := os.MkdirTemp("", "sys")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "devices/system/cpu"), 0o755)
	os.WriteFile(filepath.Join(dir, "devices/system/cpu/online"), []byte("0-3\n"), 0o444)
	os.MkdirAll(filepath.Join(dir, "bus"), 0o755)
	os.Symlink("../devices/system/cpu", filepath.Join(dir, "bus/cpu"))

	t := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
	rep, err := MirrorHost(t, dir, MirrorOptions{})
	if err != nil {
		panic(err)
	}
	online, _ := fs.ReadFile(t.FS(kernfsim.RootCred), "bus/cpu/online")
	fmt.Printf("%d directories, %d attributes, %d symlinks\n", rep.Dirs, rep.Attrs, rep.Symlinks)
	fmt.Printf("bus/cpu/online: %s", online)
	// Output:
	// 4 directories, 1 attributes, 1 symlinks
	// bus/cpu/online: 0-3
}

// TestMirrorHostSysfsModes mirrors real sysfs directories, where the
// mirror takes an attribute's mode from the fd its reader opened rather
// than from the listing, and checks every entry against the host's lstat:
// kind, mode, owner, symlink target, and the attributes without a read
// bit (a bus's uevent and drivers_probe) counted unread and unreadable.
func TestMirrorHostSysfsModes(t *testing.T) {
	for _, dir := range []string{"/sys/bus/cpu", "/sys/devices/virtual/net/lo"} {
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("no sysfs here: %v", err)
		}
		tr, rep := mirrorTest(t, "rcu", dir, MirrorOptions{})
		w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
		var notRead int
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			rel := strings.TrimPrefix(p, dir+"/")
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(p, &st))
			n, err := w.Lresolve(kernfsim.RootCred, rel)
			if err != nil {
				t.Errorf("%s: not mirrored: %v", rel, err)
				return nil
			}
			got := tr.Getattr(n)
			want := fs.FileMode(st.Mode) & fs.ModePerm
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				want = 0o777
				target, _ := os.Readlink(p)
				if n.Kind() != kernfsim.KindSymlink || n.Target() != target {
					t.Errorf("%s: got %v -> %q, want symlink -> %q", rel, n.Kind(), n.Target(), target)
				}
			case unix.S_IFREG:
				if n.Kind() != kernfsim.KindAttr {
					t.Errorf("%s: got %v, want an attribute", rel, n.Kind())
				}
				if st.Mode&0o444 == 0 {
					notRead++
					if _, e := readMirrored(t, tr, rel); e != syscall.EACCES {
						t.Errorf("%s: reading a file without a read bit gave errno %v, want EACCES", rel, e)
					}
				}
			}
			if got.Mode != want || got.Uid != st.Uid || got.Gid != st.Gid {
				t.Errorf("%s: got mode %04o owner %d:%d, want %04o %d:%d", rel, got.Mode, got.Uid, got.Gid, want, st.Uid, st.Gid)
			}
			return nil
		})
		require.NoError(t, err)
		if rep.NotRead != notRead {
			t.Errorf("%s: report counts %d attributes unread, the host has %d without a read bit", dir, rep.NotRead, notRead)
		}
	}
}
