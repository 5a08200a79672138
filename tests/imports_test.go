package tests

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the import path of this repository's root.
const module = "github.com/kernfsim/kernfsim"

// levels places each room of the layout. A package may import only
// packages of a lower level: no room imports one above it, and rooms of
// one level do not import each other. A key ending in "/" places every
// package below it; the longest key that matches wins. A room listed here
// need not exist yet.
//
// The picture, from the bottom:
//
//	locking (the standard library and internal/pshard only)
//	kernfsim; client (the control-file protocol and its parsers, which sysfs
//	  answers with, so client sits below sysfs)
//	sysfs (the contents)
//	fusefs/uring, then fusefs
//	what the engine and its tools share, one concept each: workload (ops
//	  and the directory they run on), errtally, latency, limits,
//	  provenance, reference, series; then serverproc (the server child),
//	  then targets (what a run measures)
//	loadgen (the engine), loadgen/soak, loadgen/teardown,
//	  loadgen/kernelprobe (the tools beside it; one room each)
//	loadgen/report, then loadgen/plot
//	internal/cli, then internal/mountcmd (the commands' flags and the
//	  mount command)
//	cmd/ and tools/ (programs)
//
// The internal packages sit just below the lowest room that uses them.
var levels = map[string]int{
	"internal/pshard":  5,
	"internal/setting": 5,
	"locking":          10,
	"kernfsim":         20,
	"client":           20,
	"sysfs":            30,

	"internal/fusectl":   35,
	"internal/mountinfo": 35,
	"fusefs/uring":       40,
	"fusefs":             50,

	"internal/buildinfo": 55,
	"internal/meminfo":   55,
	"internal/textout":   55,
	"loadgen/gobench":    55,
	"loadgen/errtally":   56,
	"loadgen/latency":    56,
	"loadgen/limits":     56,
	"loadgen/provenance": 56,
	"loadgen/reference":  56,
	"loadgen/series":     56,
	"loadgen/workload":   56,
	"loadgen/serverproc": 57,
	"loadgen/targets":    58,

	"loadgen":             60,
	"loadgen/soak":        60,
	"loadgen/teardown":    60,
	"loadgen/kernelprobe": 60,
	"loadgen/report":      62,
	"loadgen/plot":        64,

	"internal/cli":      70,
	"internal/guardian": 72,
	"internal/mountcmd": 75,
	"cmd/":              80,
	"tools/":            80,
	"tests":             90,
}

// testOnly are the packages that only tests may import; they may import
// any room.
var testOnly = []string{
	"internal/testkit", "internal/testkit/testtree", "internal/fusetest",
	"internal/goldenfile", "internal/clitest", "internal/parbench",
	"loadgen/internal/testproc",
}

// external limits who may import a module from outside the repository:
// flags stay in the commands, FUSE in fusefs (and tools/chainfs, a
// file system served to measure the transport), plots in loadgen/plot,
// the mount table's parser in internal/mountinfo, testify in tests.
var external = map[string][]string{
	"github.com/spf13/cobra":        {"cmd/", "internal/cli", "internal/mountcmd"},
	"github.com/spf13/pflag":        {"cmd/", "internal/cli", "internal/mountcmd"},
	"github.com/hanwen/go-fuse/v2":  {"fusefs", "fusefs/uring", "tools/chainfs"},
	"gonum.org/v1/plot":             {"loadgen/plot"},
	"github.com/moby/sys/mountinfo": {"internal/mountinfo"},
	"github.com/stretchr/testify":   {}, // and the test-only packages
}

// pending are imports the layout forbids that the tree still has. An
// entry no longer needed fails the test, so that it is removed.
var pending = map[[2]string]bool{}

// TestImportsKeepTheLayout checks every import of every package's
// non-test files against levels, testOnly and external. Tests may import
// any room.
func TestImportsKeepTheLayout(t *testing.T) {
	imports := readImports(t, "..")
	require.NotEmpty(t, imports["locking"], "no imports read for locking: is the module root ..?")
	used := map[[2]string]bool{}
	for pkg, imps := range imports {
		if _, ok := levelOf(pkg); !ok && !slices.Contains(testOnly, pkg) {
			t.Errorf("%s has no place in the layout: add it to levels", pkg)
		}
		for _, imp := range imps {
			problem := layoutProblem(pkg, imp)
			if key := [2]string{pkg, subject(imp)}; problem != "" && pending[key] {
				used[key] = true
				continue
			}
			if problem != "" {
				t.Errorf("%s imports %s: %s", pkg, imp, problem)
			}
		}
	}
	for p := range pending {
		if !used[p] {
			t.Errorf("%s no longer imports %s: remove the pending entry", p[0], p[1])
		}
	}
}

// subject is what a rule names for imp: the package's path in this
// module, the module of an external import that external names, or imp.
func subject(imp string) string {
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		return rel
	}
	for mod := range external {
		if imp == mod || strings.HasPrefix(imp, mod+"/") {
			return mod
		}
	}
	return imp
}

// layoutProblem says why pkg may not import imp, or returns "".
func layoutProblem(pkg, imp string) string {
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		return roomProblem(pkg, rel)
	}
	if !strings.Contains(strings.Split(imp, "/")[0], ".") {
		return "" // the standard library
	}
	if pkg == "locking" {
		return "locking imports the standard library only"
	}
	for mod, users := range external {
		if imp != mod && !strings.HasPrefix(imp, mod+"/") {
			continue
		}
		if slices.Contains(testOnly, pkg) || slices.ContainsFunc(users, func(u string) bool { return matches(u, pkg) }) {
			return ""
		}
		return "only " + strings.Join(append(users, "test-only packages"), ", ") + " may import " + mod
	}
	return ""
}

// roomProblem says why pkg may not import imp, both in this module, or
// returns "".
func roomProblem(pkg, imp string) string {
	if slices.Contains(testOnly, imp) {
		if slices.Contains(testOnly, pkg) {
			return ""
		}
		return imp + " is for tests only"
	}
	if slices.Contains(testOnly, pkg) {
		return ""
	}
	lp, ok := levelOf(pkg)
	if !ok {
		return pkg + " has no place in the layout: add it to levels"
	}
	li, ok := levelOf(imp)
	if !ok {
		return imp + " has no place in the layout: add it to levels"
	}
	if li >= lp {
		return "it is not below " + pkg + " in the layout (levels " + strconv.Itoa(li) + " >= " + strconv.Itoa(lp) + ")"
	}
	return ""
}

// levelOf is pkg's level: its own key's, or that of the longest key
// ending in "/" above it.
func levelOf(pkg string) (int, bool) {
	if l, ok := levels[pkg]; ok {
		return l, true
	}
	best, level := "", 0
	for k, l := range levels {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(pkg, k) && len(k) > len(best) {
			best, level = k, l
		}
	}
	return level, best != ""
}

// matches reports whether pattern, a package or a key ending in "/",
// covers pkg.
func matches(pattern, pkg string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(pkg, pattern)
	}
	return pattern == pkg
}

// readImports returns the imports of the non-test Go files of each
// package below root, keyed by the package's path relative to root ("."
// for root). It reads every file whatever its build constraints.
func readImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		for _, s := range f.Imports {
			imp, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			if !slices.Contains(out[pkg], imp) {
				out[pkg] = append(out[pkg], imp)
			}
		}
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestLayoutRules checks that the rules above refuse what they must: an
// upward import, an import within one level, a package the layout does
// not place, and a flag library outside the commands.
func TestLayoutRules(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		ok       bool
	}{
		{"sysfs", module + "/client", true},
		{"client", module + "/sysfs", false},
		{"kernfsim", module + "/fusefs", false},
		{"kernfsim", module + "/client", false},
		{"fusefs", module + "/fusefs/uring", true},
		{"fusefs/uring", module + "/fusefs", false},
		{"loadgen/soak", module + "/loadgen/targets", true},
		{"loadgen/soak", module + "/loadgen/teardown", false},
		{"loadgen/targets", module + "/loadgen/serverproc", true},
		{"loadgen/serverproc", module + "/loadgen/targets", false},
		{"loadgen/workload", module + "/loadgen/latency", false},
		{"loadgen/plot", module + "/loadgen/report", true},
		{"loadgen", module + "/loadgen/plot", false},
		{"cmd/loadgen", module + "/loadgen/plot", true},
		{"tools/fuseguard", module + "/internal/fusectl", true},
		{"loadgen", module + "/internal/testkit", false},
		{"internal/fusetest", module + "/fusefs/uring", true},
		{"newroom", module + "/locking", false},
		{"locking", "golang.org/x/sys/unix", false},
		{"loadgen", "github.com/spf13/pflag", false},
		{"internal/mountcmd", "github.com/spf13/cobra", true},
		{"fusefs", "github.com/stretchr/testify/require", false},
		{"internal/testkit", "github.com/stretchr/testify/require", true},
		{"kernfsim", "golang.org/x/sys/unix", true},
		{"locking", "sync/atomic", true},
	} {
		if got := layoutProblem(c.pkg, c.imp); (got == "") != c.ok {
			t.Errorf("%s imports %s: got problem %q, want allowed %v", c.pkg, c.imp, got, c.ok)
		}
	}
}
