// Command chainfs serves libfuse's reference chain from Go, to measure the transport.
//
// The chain is ../shared/anchors/libfuse/chain_ll_uring.c. chainfs serves
// it over the io_uring transport of fusefs/uring or over go-fuse's
// /dev/fuse loop. The transport is then measured against libfuse's own
// with the same server logic (scripts/measure/libfuse.sh).
//
//	chainfs [--transport uring|devfuse] [--depth N] MOUNTPOINT
//
// It prints "serving MOUNTPOINT" once mounted, and unmounts on SIGINT or
// SIGTERM. It needs root and /dev/fuse.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	flags := flag.NewFlagSet("chainfs", flag.ContinueOnError)
	transport := flags.String("transport", "uring", "uring or devfuse")
	depth := flags.Int("depth", 0, "requests a queue holds (0: the transport's default)")
	deferTW := flags.Bool("defer-taskrun", false, "set the rings up with deferred task work (uring.Config.DeferTaskRun)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 1 || (*transport != "uring" && *transport != "devfuse") {
		fmt.Fprintln(os.Stderr, "usage: chainfs [--transport uring|devfuse] [--depth N] [--defer-taskrun] MOUNTPOINT")
		return 2
	}
	mnt := flags.Arg(0)
	opts := &fuse.MountOptions{DirectMount: true, DisableXAttrs: true, DisableReadDirPlus: true, MaxBackground: 12}
	srv, err := uring.NewServer(chain{fuse.NewDefaultRawFileSystem()}, mnt, opts, uring.Config{Only: uring.Kind(*transport), Depth: *depth, DeferTaskRun: *deferTW, HoldP: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "chainfs: %v\n", err)
		return 1
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		fmt.Fprintf(os.Stderr, "chainfs: %v\n", err)
		return 1
	}
	fmt.Printf("serving %s\n", mnt)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	if err := srv.Unmount(); err != nil {
		fmt.Fprintf(os.Stderr, "chainfs: unmount %s: %v\n", mnt, err)
		return 1
	}
	return 0
}
