package kernfsim

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// FuzzValidateName checks names: an accepted name can be created and
// looked up; a rejected one gets EINVAL or ENAMETOOLONG and changes nothing;
// ValidateName, which looks at bytes, agrees with a check of runes.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"eth0", "", ".", "..", "a/b", "a\nb", "ü", strings.Repeat("z", 256), "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := ValidateName(name), validateNameRunes(name); got != want {
			t.Fatalf("ValidateName(%q) = %v, want %v (by runes)", name, got, want)
		}
		tr := newTestTree(t, "rcu")
		n, err := tr.Mkdir(tr.Root(), name, 0o755)
		if e := ValidateName(name); e != 0 {
			if !errors.Is(err, e) || tr.Nodes() != 1 {
				t.Fatalf("Mkdir(%q): got %v and %d nodes, want %v and nothing added", name, err, tr.Nodes(), e)
			}
			return
		}
		require.NoError(t, err, "Mkdir(%q) of a valid name", name)
		if got := testkit.Must(tr.Lookup(tr.Root(), name))(t); got != n || bytes.ContainsAny([]byte(name), "/\x00") {
			t.Fatalf("Lookup(%q) found %p, want %p", name, got, n)
		}
	})
}

// validateNameRunes is ValidateName written over runes, as it was before
// it looked at bytes.
func validateNameRunes(name string) syscall.Errno {
	switch {
	case name == "" || name == "." || name == "..":
		return syscall.EINVAL
	case len(name) > MaxNameLen:
		return syscall.ENAMETOOLONG
	case strings.IndexFunc(name, func(r rune) bool { return r == '/' || r < 0x20 || r == 0x7f }) >= 0:
		return syscall.EINVAL
	}
	return 0
}
