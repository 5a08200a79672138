package uring_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// Example serves go-fuse's loopback file system as fuse.NewServer would,
// over io_uring where the kernel offers it and over /dev/fuse otherwise.
// It needs root (mount(2)) and /dev/fuse.
func Example() {
	dir, err := os.MkdirTemp("", "uring-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	orig, mnt := filepath.Join(dir, "orig"), filepath.Join(dir, "mnt")
	for _, d := range []string{orig, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(orig, "hello"), []byte("hello, world\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	root, err := fs.NewLoopbackRoot(orig)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := uring.NewServer(fs.NewNodeFS(root, nil), mnt, &fuse.MountOptions{DirectMount: true},
		uring.Config{MaxPinnedBytes: 256 << 20}) // at most 256 MiB of queue buffers, however many CPUs
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil { // mounted, and primed for clients in this process
		log.Fatal(err)
	}
	if srv.Transport() == uring.URing {
		log.Printf("io_uring: %d queues of %d entries, %d bytes of buffers", srv.Queues(), srv.Depth(), srv.PinnedBytes())
	} else {
		log.Printf("/dev/fuse: %v", srv.FellBack())
	}

	b, err := os.ReadFile(filepath.Join(mnt, "hello"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	if err := srv.Unmount(); err != nil {
		log.Fatal(err)
	}
	// Output: hello, world
}

// helloRoot is a node tree of one file.
type helloRoot struct{ fs.Inode }

func (r *helloRoot) OnAdd(ctx context.Context) {
	f := &fs.MemRegularFile{Data: []byte("hello from a node tree\n"), Attr: fuse.Attr{Mode: 0o444}}
	r.AddChild("hello", r.NewPersistentInode(ctx, f, fs.StableAttr{}), false)
}

// ExampleMount serves a tree of go-fuse's fs package, as fs.Mount would.
func ExampleMount() {
	mnt, err := os.MkdirTemp("", "uring-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(mnt)
	opts := &fs.Options{MountOptions: fuse.MountOptions{DirectMount: true}}
	srv, err := uring.Mount(mnt, &helloRoot{}, opts, uring.Config{})
	if err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(mnt, "hello"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	if err := srv.Unmount(); err != nil {
		log.Fatal(err)
	}
	// Output: hello from a node tree
}
