package sysfs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// abiConflicts are host layouts with an entry where the in-tree ABI adds
// its own, and the conflict AddABI reports for each.
var abiConflicts = []struct {
	name  string
	files []hostFile
	want  ABIConflictError
}{
	{"bus is a file", []hostFile{{path: "bus", mode: 0o644, data: "x\n"}},
		ABIConflictError{"bus", kernfsim.KindAttr, "bus/kernfsim/new_device"}},
	{"devices is a file", []hostFile{{path: "devices", mode: 0o444}},
		ABIConflictError{"devices", kernfsim.KindAttr, "devices/kernfsim"}},
	{"class is a symlink", []hostFile{{path: "devices", mode: 0o755, dir: true}, {path: "class", target: "devices"}},
		ABIConflictError{"class", kernfsim.KindSymlink, "class/kernfsim"}},
	{"bus/kernfsim is a file", []hostFile{{path: "bus/kernfsim", mode: 0o644}},
		ABIConflictError{"bus/kernfsim", kernfsim.KindAttr, "bus/kernfsim/new_device"}},
	{"devices/kernfsim is a symlink", []hostFile{{path: "devices/kernfsim", target: "../bus"}},
		ABIConflictError{"devices/kernfsim", kernfsim.KindSymlink, "devices/kernfsim"}},
	{"a kernfsim mount's delete_device", []hostFile{{path: "bus/kernfsim/delete_device", mode: 0o200}},
		ABIConflictError{"bus/kernfsim/delete_device", kernfsim.KindAttr, "bus/kernfsim/delete_device"}},
	{"kernel is a file", []hostFile{{path: "kernel", mode: 0o644}},
		ABIConflictError{"kernel", kernfsim.KindAttr, "kernel/kernfsim/stats"}},
	{"kernel/kernfsim/stats exists", []hostFile{{path: "kernel/kernfsim/stats", mode: 0o444, data: "k 1\n"}},
		ABIConflictError{"kernel/kernfsim/stats", kernfsim.KindAttr, "kernel/kernfsim/stats"}},
}

func TestAddABIConflict(t *testing.T) {
	for _, c := range abiConflicts {
		t.Run(c.name, func(t *testing.T) {
			tr, _ := mirrorTest(t, "rwsem", makeHost(t, c.files), MirrorOptions{})
			before := tr.Nodes()
			_, err := AddABI(tr, kernfsim.Static("k 1\n"))
			var ce *ABIConflictError
			if !errors.As(err, &ce) || *ce != c.want {
				t.Fatalf("got %v, want %+v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.want.Path) || !strings.Contains(err.Error(), "in-tree ABI") {
				t.Errorf("message %q does not name %s and the ABI", err, c.want.Path)
			}
			if n := tr.Nodes(); n != before {
				t.Errorf("the failed AddABI left %d nodes, want the %d before", n, before)
			}
		})
	}
}

// TestAddABIExistingDirs: directories on the ABI's paths are used as
// they are, and kernel/kernfsim/stats conflicts only with a stats file.
func TestAddABIExistingDirs(t *testing.T) {
	dir := makeHost(t, []hostFile{
		{path: "bus/kernfsim", mode: 0o755, dir: true},
		{path: "devices/kernfsim/old/uevent", mode: 0o644},
		{path: "class", mode: 0o755, dir: true},
		{path: "kernel/kernfsim/stats", mode: 0o444},
	})
	tr, _ := mirrorTest(t, "rwsem", dir, MirrorOptions{})
	a := testkit.Must(AddABI(tr, nil))(t)
	require.NoError(t, a.Create("dev0", 0))
	w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
	for _, p := range []string{"bus/kernfsim/new_device", "devices/kernfsim/old/uevent", "devices/kernfsim/dev0/value", "class/kernfsim/dev0"} {
		testkit.Must(w.Lresolve(kernfsim.RootCred, p))(t)
	}
}

func TestAssembleHostConflict(t *testing.T) {
	for _, c := range abiConflicts {
		t.Run(c.name, func(t *testing.T) {
			dir := makeHost(t, c.files)
			_, err := Assemble(Options{Lock: "rwsem", HostDir: dir, ABI: true,
				Stats: func(*kernfsim.Tree) kernfsim.Source { return kernfsim.Static("") }})
			var oe *OptionError
			var ce *ABIConflictError
			if !errors.As(err, &oe) || oe.Option != "HostDir" || !errors.As(err, &ce) || *ce != c.want {
				t.Fatalf("got %v, want an OptionError for HostDir wrapping %+v", err, c.want)
			}
			if want := "remove or rename " + filepath.Join(dir, c.want.Path); !strings.Contains(err.Error(), want) {
				t.Errorf("got %q, want it to say %q", err, want)
			}
		})
	}
}
