package kernfsim_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// A tree under the rwsem strategy, read through the walker as the kernel's
// path walk would: per component a permission check and a lookup.
func ExampleWalker_ReadFile() {
	tr := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
	dev, _ := tr.Mkdir(tr.Root(), "devices", 0o755)
	lo, _ := tr.Mkdir(dev, "lo", 0o755)
	tr.AddAttr(lo, "mtu", 0o644, kernfsim.NewValue("65536\n"))
	class, _ := tr.Mkdir(tr.Root(), "class", 0o755)
	tr.Symlink(class, "lo", "../devices/lo")

	w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
	buf := make([]byte, 32)
	n, err := w.ReadFile(kernfsim.Cred{Uid: 1000, Gid: 1000}, "class/lo/mtu", buf)
	fmt.Printf("%q %v\n", buf[:n], err)
	_, err = w.Resolve(kernfsim.RootCred, "class/eth0")
	fmt.Println(err, errors.Is(err, fs.ErrNotExist))
	// Output:
	// "65536\n" <nil>
	// lookup class/eth0: no such file or directory true
}

// Removal deactivates the node first: an open file then reads ENODEV.
func ExampleTree_Remove() {
	tr := kernfsim.New(locking.MustNew("mutex"), kernfsim.Options{})
	d, _ := tr.Mkdir(tr.Root(), "dev0", 0o755)
	a, _ := tr.AddAttr(d, "value", 0o444, kernfsim.Static("1\n"))
	f, _ := tr.Open(a, 0, kernfsim.RootCred)
	defer f.Release()

	fmt.Println(tr.Remove(context.Background(), d))
	_, err := f.Read(make([]byte, 8), 0)
	fmt.Println(err)
	// Output:
	// <nil>
	// read dev0/value: no such device
}

// Subscribers hear of each change after the writer has released its lock.
func ExampleTree_Subscribe() {
	tr := kernfsim.New(locking.MustNew("rcu"), kernfsim.Options{})
	cancel := tr.Subscribe(func(ev kernfsim.Event) {
		fmt.Println(ev.Op, ev.Name)
	})
	defer cancel()
	d, _ := tr.Mkdir(tr.Root(), "a", 0o755)
	tr.Rename(d, tr.Root(), "b")
	tr.Remove(context.Background(), d)
	// Output:
	// add a
	// rename b
	// remove b
}

// Readdir offsets are name hashes: pass the last one back to continue,
// even if the directory changed in between.
func ExampleTree_Readdir() {
	tr := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
	for _, name := range []string{"memory0", "memory1", "memory2"} {
		tr.Mkdir(tr.Root(), name, 0o755)
	}
	var names []string
	var off uint64
	for {
		got := false
		tr.Readdir(tr.Root(), off, func(e kernfsim.Dirent) bool {
			names, off, got = append(names, e.Name), e.Off, true
			return false // one entry per call
		})
		if !got {
			break
		}
	}
	fmt.Println(len(names))
	// Output: 3
}
