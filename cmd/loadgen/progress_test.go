package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/cli"
)

// openPTY opens a pseudo-terminal: the controlling side and the terminal.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// A long run shows a progress line with an ETA on a terminal, and writes
// nothing to stderr that is not one. The run on the terminal is
// interrupted once the ETA has shown.
func TestProgressOnTerminalOnly(t *testing.T) {
	long := append(smallSim[:len(smallSim):len(smallSim)], "--threads", "1", "--times", "100000000")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), append(long, "--times", "20000"), &out, &errOut); code != cli.ExitOK || errOut.Len() != 0 {
		t.Errorf("on a buffer: exit %d, stderr %q; want nothing", code, errOut.String())
	}
	ptmx, tty := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan string, 1)
	go func() { // reads until the terminal closes, so that writes never block
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			b.Write(buf[:n])
			if strings.Contains(b.String(), "left") {
				cancel()
			}
			if err != nil {
				got <- b.String()
				return
			}
		}
	}()
	code := run(ctx, long, &out, tty)
	tty.Close()
	s := <-got
	if code != cli.ExitRuntime || !strings.Contains(s, "\r\x1b[Kloadgen: ") || !strings.Contains(s, " ops, ") || !strings.Contains(s, "left") {
		t.Errorf("on a terminal: exit %d (want 1, interrupted once the ETA showed), terminal got %.300q", code, s)
	}
}

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		want        string
	}{{0, 10, ""}, {10, 10, ""}, {5, 10, ", ~4s left"}, {1, 4, ", ~12s left"}} {
		if got := eta(tc.done, tc.total, 4*time.Second); got != tc.want {
			t.Errorf("eta(%d, %d, 4s) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
}
