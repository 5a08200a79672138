package sysfs

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
)

func TestABI(t *testing.T) {
	testkit.ForEachLock(t, testtree.Writers, func(t *testing.T, lock string) {
		tr := testtree.New(t, lock)
		testkit.Must(AddABI(tr, kernfsim.Static("ok\n")))(t)
		w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
		require.NoError(t, rootWrite(w, "bus/kernfsim/new_device", "dev0 2\n"))
		buf := make([]byte, 64)
		for path, want := range map[string]string{
			"class/kernfsim/dev0/value":    "0\n",
			"devices/kernfsim/dev0/attr1":  "1\n",
			"devices/kernfsim/dev0/uevent": "DEVNAME=dev0\n",
			"kernel/kernfsim/stats":        "ok\n",
		} {
			if k := testkit.Must(w.ReadFile(kernfsim.RootCred, path, buf))(t); string(buf[:k]) != want {
				t.Errorf("%s: got %q, want %q", path, buf[:k], want)
			}
		}
		first := testkit.Must(w.ReadFile(kernfsim.RootCred, "devices/kernfsim/dev0/counter", buf))(t)
		c1 := string(buf[:first])
		second := testkit.Must(w.ReadFile(kernfsim.RootCred, "devices/kernfsim/dev0/counter", buf))(t)
		if c1 == string(buf[:second]) {
			t.Errorf("counter did not change between reads: %q", c1)
		}
		require.NoError(t, rootWrite(w, "bus/kernfsim/new_device", "dev1"))
		require.NoError(t, rootWrite(w, "bus/kernfsim/delete_device", "dev0 dev1\n"))
		for _, p := range []string{"devices/kernfsim/dev0", "class/kernfsim/dev0", "devices/kernfsim/dev1"} {
			_, err := w.Lresolve(kernfsim.RootCred, p)
			testkit.WantErrno(t, err, syscall.ENOENT)
		}
	})
}

func TestABIBadInput(t *testing.T) {
	tr := testtree.New(t, "rwsem")
	testkit.Must(AddABI(tr, nil))(t)
	w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
	require.NoError(t, rootWrite(w, "bus/kernfsim/new_device", "keep"))
	before := tr.Nodes()
	for _, c := range []struct {
		file, data string
		want       syscall.Errno
	}{
		{"new_device", "", syscall.EINVAL},
		{"new_device", "\n", syscall.EINVAL},
		{"new_device", "a/b", syscall.EINVAL},
		{"new_device", ".", syscall.EINVAL},
		{"new_device", "..", syscall.EINVAL},
		{"new_device", strings.Repeat("x", 256), syscall.EINVAL},
		{"new_device", "bad\x01name", syscall.EINVAL},
		{"new_device", "x 1 2", syscall.EINVAL},
		{"new_device", "x -1", syscall.EINVAL},
		{"new_device", "x 65", syscall.EINVAL},
		{"new_device", "x two", syscall.EINVAL},
		{"new_device", strings.Repeat("x", kernfsim.PageSize+1), syscall.EINVAL},
		{"new_device", "keep", syscall.EEXIST},
		{"delete_device", "nosuch", syscall.ENODEV},
		{"delete_device", "keep nosuch", syscall.ENODEV},
		{"delete_device", "keep keep", syscall.EINVAL},
		{"delete_device", "keep ..", syscall.EINVAL},
		{"delete_device", "", syscall.EINVAL},
	} {
		err := rootWrite(w, "bus/kernfsim/"+c.file, c.data)
		if !errors.Is(err, c.want) {
			t.Errorf("%s %q: got %v, want %v", c.file, c.data, err, c.want)
		}
	}
	if got := tr.Nodes(); got != before {
		t.Fatalf("nodes after rejected writes: got %d, want %d (nothing may change)", got, before)
	}
	_, err := w.Open(kernfsim.Cred{Uid: 1000}, "bus/kernfsim/new_device", os.O_WRONLY)
	testkit.WantErrno(t, err, syscall.EACCES)
}

func TestABIMaxDevices(t *testing.T) {
	tr := testtree.New(t, "rcu")
	testkit.Must(AddABIWith(tr, ABIOptions{MaxDevices: 2}))(t)
	w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
	require.NoError(t, rootWrite(w, "bus/kernfsim/new_device", "a"))
	require.NoError(t, rootWrite(w, "bus/kernfsim/new_device", "b"))
	if err := rootWrite(w, "bus/kernfsim/new_device", "c"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("third device with a limit of 2: got %v, want ENOSPC", err)
	}
	require.NoError(t, rootWrite(w, "bus/kernfsim/delete_device", "a"))
	require.NoError(t, rootWrite(w, "bus/kernfsim/new_device", "c"))
}
