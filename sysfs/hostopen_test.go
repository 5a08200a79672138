package sysfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// forEachResolve runs fn with openat2, then with the per-component walk.
func forEachResolve(t *testing.T, fn func(t *testing.T)) {
	for _, walk := range []bool{false, true} {
		name := "resolve=openat2"
		if walk {
			name = "resolve=walk"
		}
		t.Run(name, func(t *testing.T) {
			old := noOpenat2.Swap(walk)
			defer noOpenat2.Store(old)
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

// TestMirrorHostChanged swaps an attribute for a symlink to a secret, and
// another for a FIFO, just before each is read: both are reported
// changed and fail EIO, nothing is read from either, and nothing blocks.
func TestMirrorHostChanged(t *testing.T) {
	forEachResolve(t, func(t *testing.T) {
		dir, secret := makeSwapHost(t, -1)
		defer swapRead(func(f *attrFile, max int) hostRead {
			if p := map[string]string{"a": "l", "f": "p"}[f.name]; p != "" {
				require.NoError(t, unix.Renameat2(f.dir.fd, f.name, f.dir.fd, p, unix.RENAME_EXCHANGE))
			}
			return readHostFile(f, max)
		})()
		tr, rep := mirrorTest(t, "rwsem", dir, MirrorOptions{})
		slices.Sort(rep.Changed)
		if want := []string{"a", "f"}; !slices.Equal(rep.Changed, want) {
			t.Errorf("got Changed %q, want %q", rep.Changed, want)
		}
		for _, p := range []string{"a", "f"} {
			if got, e := readMirrored(t, tr, p); e != syscall.EIO {
				t.Errorf("%s: got %q (errno %v), want EIO", p, got, e)
			}
		}
		checkSwapMirror(t, tr, rep, secret)
		if s := rep.String(); !strings.Contains(s, "2 entries were another file when opened than when listed") {
			t.Errorf("report %q does not count the 2 changed entries", s)
		}
	})
}
