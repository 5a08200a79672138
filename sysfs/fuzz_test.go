package sysfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// snapshot renders every node of tr (path, kind, mode, owner, contents of
// readable attributes) in a fixed order, so two snapshots are equal
// exactly when the tree is. Dynamic attributes must be frozen.
func snapshot(t testing.TB, tr *kernfsim.Tree) string {
	t.Helper()
	var b strings.Builder
	fsys := tr.FS(kernfsim.RootCred)
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(kernfsim.Stat)
		fmt.Fprintf(&b, "%s %v %d:%d", path, info.Mode(), st.Uid, st.Gid)
		if info.Mode().IsRegular() && info.Mode()&0o444 != 0 {
			data, _ := fs.ReadFile(fsys, path)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteByte('\n')
		return nil
	})
	require.NoError(t, err)
	return b.String()
}

// newFuzzTree is a small synthetic machine with the ABI and one device.
func newFuzzTree(t testing.TB) (*kernfsim.Tree, *kernfsim.Walker) {
	tr := testtree.New(t, "rwsem")
	c := SynthConfig{CPUs: 2, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 2, Netdevs: 1, Disks: 1}.WithDefaults()
	require.NoError(t, BuildSynthetic(tr, c))
	testkit.Must(AddABI(tr, nil))(t)
	w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
	f := testkit.Must(w.Open(kernfsim.RootCred, "bus/kernfsim/new_device", os.O_WRONLY))(t)
	testkit.Must(f.Write(t.Context(), []byte("dev0 1")))(t)
	f.Release()
	tr.Freeze(true)
	return tr, w
}

// writeFile writes data to path as root and returns the write's error.
func writeFile(w *kernfsim.Walker, path string, data []byte) error {
	f, err := w.Open(kernfsim.RootCred, path, os.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Release()
	_, err = f.Write(context.Background(), data)
	return err
}

// rejections are the errnos bad input may get.
var rejections = []syscall.Errno{syscall.EINVAL, syscall.EEXIST, syscall.ENODEV, syscall.ENAMETOOLONG, syscall.ENOSPC}

func isRejection(err error) bool {
	for _, e := range rejections {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzControlFiles writes arbitrary bytes to the control files and the
// writable attributes. Every write either succeeds or is rejected with a
// clear errno, and a rejected write leaves the tree exactly as it was.
func FuzzControlFiles(f *testing.F) {
	for _, s := range []string{"dev1", "dev1 3\n", "dev0", "", "\n", "a/b", "..", "x 99", "dev0 dev0", strings.Repeat("y", 300), "nul\x00", "0", "1\n", "online", "offline"} {
		f.Add(0, []byte(s))
		f.Add(1, []byte(s))
		f.Add(2, []byte(s))
	}
	targets := []string{"bus/kernfsim/new_device", "bus/kernfsim/delete_device",
		"devices/system/cpu/cpu1/online", "devices/system/memory/memory0/online", "devices/system/memory/memory1/state", "devices/system/memory/probe"}
	f.Fuzz(func(t *testing.T, which int, data []byte) {
		tr, w := newFuzzTree(t)
		path := targets[uint(which)%uint(len(targets))]
		before := snapshot(t, tr)
		err := writeFile(w, path, data)
		switch {
		case err == nil:
		case isRejection(err):
			if after := snapshot(t, tr); after != before {
				t.Fatalf("write %q to %s was rejected (%v) but changed the tree", data, path, err)
			}
		default:
			t.Fatalf("write %q to %s: got %v, want success or one of %v", data, path, err, rejections)
		}
	})
}

// FuzzWalk resolves arbitrary paths: never a panic, and every failure is a
// *fs.PathError for that path carrying an errno.
func FuzzWalk(f *testing.F) {
	for _, s := range []string{"devices/system/cpu/cpu0/topology/core_id", "class/net/lo/../lo/mtu", "/", "", "a//b", "../../..", strings.Repeat("a/", 100), "class/net/lo/address/x", "\x00"} {
		f.Add(s)
	}
	tr, w := newFuzzTree(f)
	user := kernfsim.Cred{Uid: 1000, Gid: 1000}
	f.Fuzz(func(t *testing.T, path string) {
		n, err := w.Resolve(user, path)
		var pe *fs.PathError
		var errno syscall.Errno
		switch {
		case err == nil && n == nil:
			t.Fatalf("Resolve(%q): no node and no error", path)
		case err != nil && (!errors.As(err, &pe) || pe.Path != path || !errors.As(err, &errno)):
			t.Fatalf("Resolve(%q): got %v (%T), want a *fs.PathError for the path with an errno", path, err, err)
		case err == nil && !n.IsActive():
			t.Fatalf("Resolve(%q) returned a removed node", path)
		}
		_ = tr
	})
}
