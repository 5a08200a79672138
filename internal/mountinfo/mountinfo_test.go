package mountinfo

import "testing"

func TestIsMountpoint(t *testing.T) {
	if ok, err := IsMountpoint("/"); err != nil || !ok {
		t.Fatalf("IsMountpoint(/): got %v, %v; want true", ok, err)
	}
	if ok, err := IsMountpoint(t.TempDir()); err != nil || ok {
		t.Fatalf("IsMountpoint(a fresh directory): got %v, %v; want false", ok, err)
	}
}

func TestUnescape(t *testing.T) {
	if got := unescapeMountinfo(`/mnt/a\040b\\x`); got != `/mnt/a b\\x` {
		t.Fatalf("got %q", got)
	}
}

func TestBelow(t *testing.T) {
	subs, err := Below("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if len(s) <= len("/proc/") || s[:len("/proc/")] != "/proc/" {
			t.Fatalf("Below(/proc) listed %q", s)
		}
	}
	if subs, err := Below(t.TempDir()); err != nil || len(subs) != 0 {
		t.Fatalf("Below(a fresh directory): got %q, %v; want none", subs, err)
	}
}
