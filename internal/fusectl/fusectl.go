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
	path, err := abortPath(conn)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort FUSE connection %d: %w", conn, err)
	}
	return nil
}

// OpenAbort opens connection conn's abort file for writing. The file stays
// bound to the connection it was opened for: writing to it aborts conn
// while conn exists and does nothing once conn has gone, even if a later
// connection took its number (the kernel clears the file's connection
// when it removes the connection's directory). The open file keeps
// fusectl's mount busy, not the connection.
func OpenAbort(conn uint32) (*os.File, error) {
	path, err := abortPath(conn)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open the abort file of FUSE connection %d: %w", conn, err)
	}
	return f, nil
}

// abortPath is conn's abort file, with fusectl mounted on Dir.
func abortPath(conn uint32) (string, error) {
	path := fmt.Sprintf("%s/%d/abort", Dir, conn)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := unix.Mount("fusectl", Dir, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return "", fmt.Errorf("mount fusectl on %s: %w", Dir, err)
		}
	}
	return path, nil
}
