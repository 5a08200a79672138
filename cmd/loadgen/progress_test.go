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
// nothing to stderr that is not one.
func TestProgressOnTerminalOnly(t *testing.T) {
	long := append(smallSim[:len(smallSim):len(smallSim)], "--times", "1000000", "--threads", "1")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), append(long, "--times", "200000"), &out, &errOut); code != exitOK || errOut.Len() != 0 {
		t.Errorf("on a buffer: exit %d, stderr %q; want nothing", code, errOut.String())
	}
	ptmx, tty := openPTY(t)
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			b.Write(buf[:n])
			if err != nil || strings.Contains(b.String(), "left") {
				got <- b.String()
				return
			}
		}
	}()
	if code := run(context.Background(), long, &out, tty); code != exitOK {
		t.Fatalf("on a terminal: exit %d", code)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, "\r\x1b[Kloadgen: ") || !strings.Contains(s, " ops, ") {
			t.Errorf("terminal got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Error("no progress line with an ETA on the terminal")
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
