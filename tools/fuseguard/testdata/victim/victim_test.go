// Package victim is a test binary that hangs in FUSE the way the suite
// once did: a client in this process waits for a LOOKUP that this
// process's own server has read and will never answer. When the test
// times out the binary cannot die (the client's thread stays in
// request_wait_answer, uninterruptible, and keeps the server's
// /dev/fuse descriptor open). fuseguard's test runs it; go test ./...
// does not (testdata is not a package pattern's).
package victim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// neverAnswers is a file system whose LOOKUP never returns.
type neverAnswers struct{ fuse.RawFileSystem }

func (neverAnswers) Lookup(cancel <-chan struct{}, _ *fuse.InHeader, _ string, _ *fuse.EntryOut) fuse.Status {
	select {} // not even cancel: the request stays read and unanswered
}

func TestHangInFUSE(t *testing.T) {
	mnt := t.TempDir()
	srv, err := fuse.NewServer(neverAnswers{fuse.NewDefaultRawFileSystem()}, mnt, &fuse.MountOptions{DirectMount: true, FsName: "victim", Name: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		t.Fatal(err)
	}
	os.Stat(filepath.Join(mnt, "x")) // never returns
	t.Fatal("the LOOKUP was answered")
}
