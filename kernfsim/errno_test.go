package kernfsim

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

func TestErrno(t *testing.T) {
	for _, c := range []struct {
		err  error
		want syscall.Errno
	}{
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENODEV}, syscall.ENODEV},
		{fmt.Errorf("wrapped: %w", os.ErrNotExist), syscall.ENOENT},
		{fs.ErrPermission, syscall.EACCES},
		{fmt.Errorf("no errno"), syscall.EIO},
	} {
		if got := Errno(c.err); got != c.want {
			t.Errorf("Errno(%v): got %v, want %v", c.err, got, c.want)
		}
	}
}

func TestErrnoName(t *testing.T) {
	for e, want := range map[syscall.Errno]string{0: "success", syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST", 524: "ENOTSUPP", 4095: "errno 4095"} {
		if got := ErrnoName(e); got != want {
			t.Errorf("ErrnoName(%d): got %q, want %q", e, got, want)
		}
	}
}

// TestDisconnected checks the one rule for a dead server: every errno the
// kernel gives for an ended connection, on either transport, and no other.
func TestDisconnected(t *testing.T) {
	for err, want := range map[error]bool{
		nil:                  false,
		syscall.ENOTCONN:     true,
		syscall.ECONNABORTED: true,
		syscall.ECANCELED:    true,
		syscall.ENOENT:       false,
		syscall.EIO:          false,
		fmt.Errorf("other"):  false,
		&fs.PathError{Op: "stat", Path: "/mnt/k", Err: syscall.ECANCELED}: true,
	} {
		if got := Disconnected(err); got != want {
			t.Errorf("Disconnected(%v): got %v, want %v", err, got, want)
		}
	}
}
