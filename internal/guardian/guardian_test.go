package guardian

import (
	"testing"

	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// TestShouldAbort checks the decision rule: the guardian aborts only a
// dying server's live connection that is still mounted at the server's
// mountpoint, never one mounted elsewhere, replaced there, or gone.
func TestShouldAbort(t *testing.T) {
	const point, conn = "/mnt/k", 57
	ours := mountinfo.Entry{ID: 40, Parent: 1, Major: 0, Minor: conn, Point: point, FSType: "fuse.kernfsim"}
	with := func(es ...mountinfo.Entry) []mountinfo.Entry { return es }
	moved := ours
	moved.Point = "/mnt/other"
	later := ours
	later.Minor = conn + 1
	tmpfs := ours
	tmpfs.FSType = "tmpfs"
	cover := mountinfo.Entry{ID: 41, Parent: 40, Major: 0, Minor: 80, Point: point, FSType: "tmpfs"}
	block := ours
	block.Major = 8
	for _, c := range []struct {
		name        string
		dying, live bool
		table       []mountinfo.Entry
		want        bool
	}{
		{"dying, live, mounted", true, true, with(ours), true},
		{"dying, live, covered by another mount", true, true, with(ours, cover), true},
		{"alive", false, true, with(ours), false},
		{"connection gone", true, false, with(ours), false},
		{"unmounted", true, true, nil, false},
		{"mounted elsewhere only", true, true, with(moved), false},
		{"a later FUSE mount at the mountpoint", true, true, with(later), false},
		{"a later tmpfs with the same minor", true, true, with(tmpfs), false},
		{"a device with the same minor", true, true, with(block), false},
		{"the number gone and reused", true, false, with(ours), false},
	} {
		if got := shouldAbort(c.dying, c.live, c.table, point, conn); got != c.want {
			t.Errorf("%s: shouldAbort got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestParseState checks the state letter is read after the command,
// whatever the command holds.
func TestParseState(t *testing.T) {
	for _, c := range []struct {
		stat string
		want byte
	}{
		{"123 (kernfsim) S 1 123 123 0 -1", 'S'},
		{"123 (kern fs) (x)) Z 1 123", 'Z'},
		{"123 (kernfsim) D", 'D'},
		{"123 (kernfsim)", 0},
		{"garbage", 0},
	} {
		if got := parseState([]byte(c.stat)); got != c.want {
			t.Errorf("parseState(%q): got %q, want %q", c.stat, got, c.want)
		}
	}
	for s, want := range map[byte]bool{'Z': true, 'X': true, 'S': false, 'D': false, 'R': false} {
		if got := dyingState(s); got != want {
			t.Errorf("dyingState(%q): got %v, want %v", s, got, want)
		}
	}
}
