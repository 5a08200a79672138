package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestMountpointArg(t *testing.T) {
	check := MountpointArg("kernfsim mount /mnt/k")
	for _, c := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"/mnt/k"}, ""},
		{[]string{" "}, ""}, // a name, if an odd one
		{nil, "missing MOUNTPOINT"},
		{[]string{"/a", "/b"}, "one MOUNTPOINT only"},
		{[]string{""}, `MOUNTPOINT is empty ("")`},
	} {
		err := check(nil, c.args)
		var ue *UsageError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: got %v, want no error", c.args, err)
		case c.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: got %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}

func TestPathVar(t *testing.T) {
	var out, dir string
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	PathVar(fs, &out, "out", "", "output")
	PathVarP(fs, &dir, "dir", "d", "/sys", "directory")
	if out != "" || dir != "/sys" {
		t.Fatalf("defaults: got %q, %q", out, dir)
	}
	if err := fs.Parse([]string{"--out=x.json", "-d", "/tmp"}); err != nil || out != "x.json" || dir != "/tmp" {
		t.Fatalf("got %v, %q, %q", err, out, dir)
	}
	if got, err := fs.GetString("dir"); err != nil || got != "/tmp" {
		t.Errorf("GetString: got %q, %v", got, err)
	}
	for _, args := range [][]string{{"--out="}, {"--out", ""}, {"-d", ""}} {
		err := fs.Parse(args)
		if err == nil || !strings.Contains(err.Error(), `invalid argument ""`) || !strings.Contains(err.Error(), "is empty") {
			t.Errorf("%q: got %v, want the empty value refused", args, err)
		}
	}
	if !strings.Contains(fs.FlagUsages(), `(default "/sys")`) {
		t.Errorf("usage lacks the default:\n%s", fs.FlagUsages())
	}
}
