// Command fuseguard runs a test binary so that a FUSE deadlock fails it
// instead of hanging the suite. Use it as go test's -exec:
//
//	go test -exec "$(go env GOPATH)/bin/fuseguard" ./...
//
// A process with a thread stuck in FUSE's request_wait_answer, once the
// request was read by a server that will never answer (the process's own
// server, killed with it), cannot die: SIGKILL leaves it a zombie, and go
// test waits for it forever. fuseguard runs the binary in a mount
// namespace of its own, which starts with no FUSE mount, so every FUSE
// connection mounted there belongs to the binary or its children. When
// the binary is still running some time past its -test.timeout, or has
// exited but a thread of it stays behind, fuseguard asks it for its
// stacks (SIGQUIT), aborts those connections through fusectl
// (/sys/fs/fuse/connections/N/abort), kills it and exits non-zero: go test
// prints the stacks and fails the package in minutes.
//
// Without root (no mount namespace, no fusectl) it runs the binary as it
// is; FUSE tests need root anyway.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// innerFlag re-executes fuseguard inside the new mount namespace: it
// detaches the FUSE mounts the namespace inherited, then execs the binary.
const innerFlag = "-fuseguard-inner"

func run(args []string) int {
	if len(args) > 0 && args[0] == innerFlag {
		return inner(args[1:])
	}
	g := guard{grace: 20 * time.Second, exitGrace: 3 * time.Second, out: os.Stderr}
	g.self, _ = os.Executable()
	for len(args) > 0 && len(args[0]) > 0 && args[0][0] == '-' {
		var err error
		switch {
		case len(args) > 1 && args[0] == "-grace":
			g.grace, err = time.ParseDuration(args[1])
		case len(args) > 1 && args[0] == "-exit-grace":
			g.exitGrace, err = time.ParseDuration(args[1])
		default:
			err = fmt.Errorf("unknown flag %s", args[0])
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "fuseguard: %v\nusage: fuseguard [-grace D] [-exit-grace D] BINARY [ARGS...]\n", err)
			return 2
		}
		args = args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: fuseguard [-grace D] [-exit-grace D] BINARY [ARGS...]")
		return 2
	}
	return g.run(args[0], args[1:])
}
