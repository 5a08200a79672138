package mountinfo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsMountpoint(t *testing.T) {
	if ok, err := IsMountpoint("/"); err != nil || !ok {
		t.Fatalf("IsMountpoint(/): got %v, %v; want true", ok, err)
	}
	if ok, err := IsMountpoint(t.TempDir()); err != nil || ok {
		t.Fatalf("IsMountpoint(a fresh directory): got %v, %v; want false", ok, err)
	}
}

// TestParseSkipsMalformed: a malformed line costs only itself.
func TestParseSkipsMalformed(t *testing.T) {
	table := Parse([]byte(`1 0 8:1 / / rw - ext4 /dev/sda1 rw
garbage
30 1 0:40 / /mnt/a\040b rw - fuse.kernfsim kernfsim rw
31 1 nocolon / /mnt/c rw - tmpfs t rw
`))
	if len(table) != 2 || table[0].ID != 1 || table[1].Point != "/mnt/a b" || table[1].Minor != 40 {
		t.Fatalf("Parse: got %+v, want the two well-formed lines", table)
	}
}

func TestBelow(t *testing.T) {
	subs, err := Below("/proc")
	require.NoError(t, err)
	for _, s := range subs {
		if len(s) <= len("/proc/") || s[:len("/proc/")] != "/proc/" {
			t.Fatalf("Below(/proc) listed %q", s)
		}
	}
	if subs, err := Below(t.TempDir()); err != nil || len(subs) != 0 {
		t.Fatalf("Below(a fresh directory): got %q, %v; want none", subs, err)
	}
}

func TestFUSE(t *testing.T) {
	table := `22 1 0:21 / /proc rw,nosuid - proc proc rw
97 30 0:45 / /tmp/a\040b rw,nosuid,nodev,relatime shared:50 - fuse.kernfsim kernfsim rw,user_id=0
98 30 0:46 / /tmp/c rw - fuse /dev/fuse rw
99 30 8:1 / /mnt/d rw - fuseblk /dev/sda1 rw
100 30 0:47 / /mnt/e rw - fusectl fusectl rw
`
	got := FUSE([]byte(table))
	want := []FUSEMount{{45, "/tmp/a b"}, {46, "/tmp/c"}}
	if len(got) != len(want) {
		t.Fatalf("FUSE: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("FUSE[%d]: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestTop(t *testing.T) {
	table := Parse([]byte(`1 0 8:1 / / rw - ext4 /dev/sda1 rw
30 1 0:40 / /mnt/k rw - fuse.kernfsim kernfsim rw
31 30 0:41 / /mnt/k rw - tmpfs t rw
32 1 0:42 / /mnt/other rw - fuse.kernfsim kernfsim rw
`))
	if top, ok := Top(table, "/mnt/k"); !ok || top.ID != 31 || top.FSType != "tmpfs" {
		t.Errorf("Top(/mnt/k): got %+v, %v; want the tmpfs (31) on the kernfsim mount", top, ok)
	}
	if top, ok := Top(table, "/mnt/other"); !ok || top.Minor != 42 || !top.FUSE() {
		t.Errorf("Top(/mnt/other): got %+v, %v; want the FUSE mount 0:42", top, ok)
	}
	if _, ok := Top(table, "/mnt/none"); ok {
		t.Errorf("Top(/mnt/none): found a mount where there is none")
	}
}
