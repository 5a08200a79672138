// Package fusectl aborts FUSE connections through /sys/fs/fuse/connections.
//
// It mounts the FUSE control file system first where it is not.
// Aborting a connection ends every request in flight on it with
// ECONNABORTED and every later one with ENOTCONN, so a client stuck
// waiting for a server that will never answer returns.
package fusectl

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Dir is where the FUSE control file system is mounted.
const Dir = "/sys/fs/fuse/connections"

// Abort aborts FUSE connection conn (the minor of its mount's device).
// It needs root (CAP_SYS_ADMIN), also to mount fusectl.
func Abort(conn uint32) error {
	path := fmt.Sprintf("%s/%d/abort", Dir, conn)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := unix.Mount("fusectl", Dir, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount fusectl on %s: %w", Dir, err)
		}
	}
	if err := os.WriteFile(path, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort FUSE connection %d: %w", conn, err)
	}
	return nil
}
