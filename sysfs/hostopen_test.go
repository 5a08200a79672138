package sysfs

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// forEachResolve runs fn with openat2 and /proc, then with their
// fallbacks: the per-component walk, and opening O_NONBLOCK.
func forEachResolve(t *testing.T, fn func(t *testing.T)) {
	for _, fallback := range []bool{false, true} {
		name := "resolve=openat2,reopen=proc"
		if fallback {
			name = "resolve=walk,reopen=nonblock"
		}
		t.Run(name, func(t *testing.T) {
			old, oldProc := noOpenat2.Swap(fallback), procSelfFD
			defer func() { noOpenat2.Store(old); procSelfFD = oldProc }()
			if fallback {
				procSelfFD = "/nonexistent/"
			}
			fn(t)
		})
	}
}

// TestOpenBeneath checks that openBeneath opens what is below its
// directory and refuses a symlink on the way or at the end, "..", and a
// mount point, which openChecked reports as changed; and that
// openChecked refuses a file that is not the one described.
func TestOpenBeneath(t *testing.T) {
	forEachResolve(t, func(t *testing.T) {
		dir, secret := makeSwapHost(t, -1)
		root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(root)
		idAt := func(rel string) fileID {
			var st unix.Stat_t
			require.NoError(t, unix.Fstatat(root, rel, &st, unix.AT_SYMLINK_NOFOLLOW))
			return idOf(&st)
		}
		for _, tc := range []struct {
			rel     string
			flags   int
			id      fileID
			changed bool
		}{
			{"d/inner", unix.O_RDONLY, idAt("d/inner"), false},
			{"d", unix.O_RDONLY | unix.O_DIRECTORY, idAt("d"), false},
			{"l", unix.O_RDONLY, idAt("a"), true},                     // a symlink to the secret where a file was listed
			{"ld/inner", unix.O_RDONLY, idAt("d/inner"), true},        // a symlink on the way
			{"ld", unix.O_RDONLY | unix.O_DIRECTORY, idAt("d"), true}, // a symlink where a directory was listed
			{"p", unix.O_RDONLY | unix.O_NONBLOCK, idAt("f"), true},   // a FIFO: opened without blocking, refused
			{"f", unix.O_RDONLY, idAt("a"), true},                     // another regular file
			{"d", unix.O_RDONLY | unix.O_DIRECTORY, idAt("."), true},  // another directory
			{"l", unix.O_PATH, idAt("l"), false},                      // the symlink itself, to read its target
			{"../dir/a", unix.O_RDONLY, idAt("a"), true},              // never up: EXDEV
		} {
			fd, changed, err := openChecked(root, tc.rel, tc.flags, tc.id)
			if err == nil {
				data := make([]byte, 100)
				n, _ := unix.Read(fd, data)
				n = max(n, 0) // a directory or O_PATH fd: nothing read
				unix.Close(fd)
				if strings.Contains(string(data[:n]), secret) {
					t.Errorf("%s: read the secret", tc.rel)
				}
			}
			if changed != tc.changed || (err != nil) != tc.changed {
				t.Errorf("%s: got changed %v, err %v; want changed and an error: %v", tc.rel, changed, err, tc.changed)
			}
		}
	})
}

// TestOpenBeneathMountPoint checks that openBeneath does not cross into
// another filesystem mounted below its directory.
func TestOpenBeneathMountPoint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	forEachResolve(t, func(t *testing.T) {
		dir := t.TempDir()
		mnt := filepath.Join(dir, "mnt")
		require.NoError(t, os.Mkdir(mnt, 0o755))
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
			t.Skipf("cannot mount a tmpfs here: %v", err)
		}
		defer syscall.Unmount(mnt, syscall.MNT_DETACH)
		require.NoError(t, os.WriteFile(filepath.Join(mnt, "inside"), []byte("x"), 0o644))
		root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(root)
		for _, rel := range []string{"mnt", "mnt/inside"} {
			fd, err := openBeneath(root, rel, unix.O_RDONLY)
			if err == nil {
				unix.Close(fd)
			}
			if err != unix.EXDEV {
				t.Errorf("%s: got %v, want EXDEV", rel, err)
			}
		}
	})
}

// TestMirrorHostChanged swaps an attribute for a symlink to a secret,
// another for a FIFO and, as root, a third for a device node, just
// before each is read: each is reported changed and fails EIO, nothing
// is read from any, and nothing blocks. The FIFO and the device node are
// not even opened (inotify sees no open): the O_PATH check comes first,
// also where /proc is missing.
// Preconditions: not parallel (forEachResolve sets package variables).
func TestMirrorHostChanged(t *testing.T) {
	forEachResolve(t, func(t *testing.T) {
		dir, secret := makeSwapHost(t, -1)
		swaps := map[string]string{"a": "l", "f": "p"}
		if os.Geteuid() == 0 {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), []byte(plainContents[0]), 0o644))
			require.NoError(t, unix.Mknod(filepath.Join(dir, "n"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))) // /dev/null
			swaps["g"] = "n"
		}
		opens := watchOpens(t, dir, slices.Collect(maps.Values(swaps)))
		defer swapRead(func(f *attrFile, max int) hostRead {
			if p := swaps[f.name]; p != "" {
				require.NoError(t, unix.Renameat2(f.dir.fd, f.name, f.dir.fd, p, unix.RENAME_EXCHANGE))
			}
			return readHostFile(f, max)
		})()
		tr, rep := mirrorTest(t, "rwsem", dir, MirrorOptions{})
		want := slices.Sorted(maps.Keys(swaps))
		if slices.Sort(rep.Changed); !slices.Equal(rep.Changed, want) {
			t.Errorf("got Changed %q, want %q", rep.Changed, want)
		}
		for _, p := range want {
			if got, e := readMirrored(t, tr, p); e != syscall.EIO {
				t.Errorf("%s: got %q (errno %v), want EIO", p, got, e)
			}
		}
		checkSwapMirror(t, tr, rep, secret)
		if s, n := rep.String(), len(want); !strings.Contains(s, fmt.Sprintf("%d entries were another file when opened than when listed", n)) {
			t.Errorf("report %q does not count the %d changed entries", s, n)
		}
		if got := opens(); got != 0 {
			t.Errorf("the FIFO or device node swapped in was opened %d times", got)
		}
		fifo, err := unix.Open(filepath.Join(dir, "f"), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0) // now the FIFO
		require.NoError(t, err)
		unix.Close(fifo)
		if got := opens(); got != 1 {
			t.Errorf("the watch saw %d opens of the FIFO opened once", got)
		}
	})
}

// watchOpens watches names in dir for opens (inotify IN_OPEN); the
// function returned says how many there were since.
func watchOpens(t *testing.T, dir string, names []string) func() int {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	for _, name := range names {
		_, err := unix.InotifyAddWatch(fd, filepath.Join(dir, name), unix.IN_OPEN)
		require.NoError(t, err)
	}
	return func() int {
		buf := make([]byte, 64<<10)
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			return 0
		}
		require.NoError(t, err)
		return n / unix.SizeofInotifyEvent // no names: events on the watched files themselves
	}
}
