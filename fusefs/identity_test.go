package fusefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// TestSecondServerRefusesToStack plays two servers started on one empty
// directory at once: the second one's check passed before the first
// mounted. The second must find itself on top of the first, unmount
// itself and fail, and the first must still serve.
func TestSecondServerRefusesToStack(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		tr, _ := newServedTree(t, "rwsem")
		first := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
		checkMountpoint = func(string, bool) error { return nil }
		defer func() { checkMountpoint = CheckMountpoint }()
		second, err := MountTree(tr, first.Mountpoint, MountOptions{Transport: uring.Config{Only: tp}})
		var ue *UsageError
		if err == nil {
			second.Unmount()
			t.Fatalf("a second server mounted on top of the first at %s", first.Mountpoint)
		}
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "already a mount") {
			t.Errorf("second mount: got %v, want a usage error saying the mountpoint is already a mount", err)
		}
		if top, present, _ := first.onTop(); !top || !present {
			t.Errorf("after the second server's refusal the first is on top %v, present %v; want both", top, present)
		}
		if _, err := os.ReadFile(filepath.Join(first.Mountpoint, "devices/system/cpu/cpu0/topology/core_id")); err != nil {
			t.Errorf("the first server after the second's refusal: %v", err)
		}
	})
}
