package uring_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// TestExtSecurityCtx is go-fuse's fs.TestExtSecurityCtx over both
// transports: with CAP_SECURITY_CTX the kernel appends a security
// context to SYMLINK, MKDIR, MKNOD and CREATE, and the debug log shows
// it (ext{…}) for every one of them; the file system still gets the
// right names.
func TestExtSecurityCtx(t *testing.T) {
	for _, kind := range transports(t) {
		t.Run("transport="+string(kind), func(t *testing.T) {
			m := mount(t, nil, fuse.MountOptions{Debug: true, ExtraCapabilities: fuse.CAP_SECURITY_CTX}, uring.Config{Only: kind})
			if m.srv.KernelSettings().Flags64()&fuse.CAP_SECURITY_CTX == 0 {
				t.Skip("the kernel does not offer CAP_SECURITY_CTX")
			}
			err := within(t, m, "create", func() error {
				return createAll(m.mnt)
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"symlink", "dir", "fifo", "file"} {
				if _, err := os.Lstat(filepath.Join(m.orig, name)); err != nil {
					t.Errorf("%s not created under its name: %v", name, err)
				}
			}
			log := m.log.String()
			for _, op := range []string{"SYMLINK", "MKDIR", "MKNOD", "CREATE"} {
				n := 0
				for _, l := range strings.Split(log, "\n") {
					if strings.HasPrefix(l, "rx ") && strings.Contains(l, ": "+op+" ") {
						n++
						if !strings.Contains(l, " ext{") {
							t.Errorf("%s logged without its extension: %s", op, l)
						}
					}
				}
				if n == 0 {
					t.Errorf("no %s in the debug log", op)
				}
			}
		})
	}
}

// createAll makes one of each kind of node the kernel sends extensions
// with, as go-fuse's test does.
func createAll(mnt string) error {
	if err := os.Symlink("some/target", filepath.Join(mnt, "symlink")); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(mnt, "dir"), 0o755); err != nil {
		return err
	}
	if err := syscall.Mkfifo(filepath.Join(mnt, "fifo"), 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(mnt, "file"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
