package tests

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxSynopsis is the longest a package synopsis (the first sentence of
// its doc, as go doc and pkg.go.dev show it) may run.
const maxSynopsis = 100

// TestPackageSynopses holds every package's synopsis to maxSynopsis
// characters, and every package to having one.
func TestPackageSynopses(t *testing.T) {
	n := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		text, ok := packageDoc(t, path)
		if !ok {
			return nil
		}
		n++
		rel, _ := filepath.Rel(repoRoot, path)
		switch s := new(doc.Package).Synopsis(text); {
		case s == "" && rel != "tests":
			t.Errorf("%s: no package doc", rel)
		case len(s) > maxSynopsis:
			t.Errorf("%s: synopsis of %d characters, want at most %d: %q", rel, len(s), maxSynopsis, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 30 {
		t.Fatalf("read %d packages: is the repository root %s?", n, repoRoot)
	}
}

// packageDoc is the package doc of the Go package in dir (its non-test
// files), and whether dir holds one.
func packageDoc(t *testing.T, dir string) (string, bool) {
	t.Helper()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, notTest, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var text string
	found := false
	for _, p := range pkgs {
		for _, f := range p.Files {
			found = true
			if f.Doc != nil {
				text += f.Doc.Text()
			}
		}
	}
	return text, found
}

// A measured figure is a number a run produced, which goes stale as the
// code and the machine change; it belongs in docs/performance.md or
// docs/notes, not in a comment. A comment's figure counts as measured
// when, outside quotes and code blocks (format examples, command lines),
// it is
//   - a decimal number with a unit (11.7 KiB, 0.4 ms, 1.5x, 449.2 ns/op)
//     or a ratio written x1.07: constants and limits are whole numbers;
//   - any number with a unit, percentages included, in a sentence that
//     says it was measured (measured, took, faster, slower, "median
//     was", or "was" and "now" together).
//
// "A 10 ms watch period" or "4096 bytes of ABI" is a definition and
// passes. Only non-test files are read: a test's figures are its
// fixtures and thresholds.
var (
	figureUnit = `(?:ns/op|B/op|allocs/op|ops/s|allocations|allocs|ns|µs|us|ms|s|sec|seconds?|minutes?|B|bytes?|KiB|MiB|GiB|TiB|kB|KB|MB|GB|%|x|×)`
	// decimalFigureRE is a decimal number with a unit, or a ratio x1.07.
	decimalFigureRE = regexp.MustCompile(`(?:\b\d+\.\d+ ?` + figureUnit + `(?:$|[^\w/])|\bx\d+\.\d+\b)`)
	// figureRE is any number, or range of numbers, with a unit.
	figureRE = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:(?: ?- ?| to )\d+(?:\.\d+)?)? ?` + figureUnit + `(?:$|[^\w/])`)
	// measuredRE is a word that says a figure beside it was measured.
	measuredRE = regexp.MustCompile(`(?i)\b(?:measured|measures|took|faster|slower|median (?:is|was))\b|\bwas\b.*\bnow\b`)
	quotedRE   = regexp.MustCompile("\"[^\"]*\"|`[^`]*`")
	sentenceRE = regexp.MustCompile(`[.!?]\s+`)
)

// measuredFigures returns the sentences of comment text (as
// ast.CommentGroup.Text gives it) that hold a measured figure.
func measuredFigures(text string) []string {
	var hits []string
	for _, s := range sentenceRE.Split(proseOf(text), -1) {
		if decimalFigureRE.MatchString(s) || figureRE.MatchString(s) && measuredRE.MatchString(s) {
			hits = append(hits, s)
		}
	}
	return hits
}

// proseOf is comment text without its code blocks (lines indented by a
// tab) and quoted spans, its lines joined into one.
func proseOf(text string) string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "\t") {
			lines = append(lines, line)
		}
	}
	return quotedRE.ReplaceAllString(strings.Join(lines, " "), `""`)
}

// goComments calls fn with the comment groups of every Go file under the
// repository, the file's path relative to the root, and whether the group
// is the package doc of a command (package main).
func goComments(t *testing.T, fn func(rel string, text string, commandDoc bool)) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		n++
		rel, _ := filepath.Rel(repoRoot, path)
		for _, g := range f.Comments {
			fn(filepath.ToSlash(rel), g.Text(), g == f.Doc && f.Name.Name == "main")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d Go files: is the repository root %s?", n, repoRoot)
	}
}

// TestProseHasNoMeasuredFigures holds comments to claims: a figure a run
// measured goes in docs/performance.md or docs/notes, and the comment
// points there.
func TestProseHasNoMeasuredFigures(t *testing.T) {
	goComments(t, func(rel, text string, _ bool) {
		for _, s := range measuredFigures(text) {
			t.Errorf("%s: a measured figure in a comment; move it to docs/performance.md or docs/notes and point there: %q", rel, s)
		}
	})
}

var (
	// flagRE is a long flag's name.
	flagRE = regexp.MustCompile(`(?:^|[^\w-])(--[a-z][a-z0-9-]*)`)
	// flagDefRE opens the doc of what a flag sets: "lockValue is --lock".
	flagDefRE = regexp.MustCompile(`^\w+ (?:is|are) --[a-z][a-z0-9-]*(?:(?:,| and| or) --[a-z][a-z0-9-]*)*`)
)

// commentFlags returns the flag names in comment text, but for the
// flags a doc names in its opening "x is --flag", and those in code
// blocks (command lines).
func commentFlags(text string) []string {
	var names []string
	for _, m := range flagRE.FindAllStringSubmatch(proseOf(flagDefRE.ReplaceAllString(text, "")), -1) {
		names = append(names, m[1])
	}
	return names
}

// TestProseNamesNoFlagsBelowCmd keeps flag names to the commands' usage
// texts: below cmd/, a comment names a flag only as the doc of what the
// flag sets ("lockValue is --lock") or in a command's package doc. Each
// command maps its settings to flags in one table, and a comment that
// spells a flag elsewhere goes stale when the table changes. Test files
// are not read: their comments describe the command lines they run.
func TestProseNamesNoFlagsBelowCmd(t *testing.T) {
	goComments(t, func(rel, text string, commandDoc bool) {
		if !strings.HasPrefix(rel, "cmd/") || commandDoc {
			return
		}
		for _, name := range commentFlags(text) {
			t.Errorf("%s: a comment names %s; name the setting, or say it in the usage text", rel, name)
		}
	})
}

// TestProseChecksFindWhatTheyShould runs the two checks above on comments
// that must and must not pass.
func TestProseChecksFindWhatTheyShould(t *testing.T) {
	figures := []struct {
		text string
		hit  bool
	}{
		{"It takes 11.7 KiB a CPU.\n", true},
		{"On two vCPUs it took 2-8% off the per-op cost.\n", true},
		{"The ratio is x1.07 now.\n", true},
		{"Measured with 1000 blocks: 1660 to 1850 bytes a block.\n", true},
		{"The lock was 40 ns and is now 12 ns.\n", true},
		{"It is 4096 ops of 100 ns, under half a millisecond.\n", false},
		{"The watch period is 10 ms.\nA sqe is 64 bytes.\n", false},
		{"Lo and Hi bound the median's 95% confidence interval.\n", false},
		{"SignedDur is Dur with its sign: \"+1.20ms\".\n", false},
		{"It writes \"total 1.23s,\nuser 2ms\" and the rest.\n", false},
		{"Windows of 100 round trips size the measurement, 30 ms at most.\n", false},
		{"The line:\n\n\tsoak t=10s p99=1.5ms\n", false},
	}
	for _, c := range figures {
		if got := measuredFigures(c.text); (len(got) > 0) != c.hit {
			t.Errorf("measuredFigures(%q) = %q, want a hit: %v", c.text, got, c.hit)
		}
	}
	flags := []struct {
		text string
		want []string
	}{
		{"lockValue is --lock: one of locking.Names.\n", nil},
		{"simCostFlags are --sim-cost and --calibrate, of a run.\n", nil},
		{"openOut opens --out FILE, or stdout.\n", []string{"--out"}},
		{"lockValue is --lock, unlike --locks.\n", []string{"--locks"}},
		{"Run it as:\n\n\tloadgen compare --locks all\n", nil},
		{"a range 1--3 and a dash -- here\n", nil},
	}
	for _, c := range flags {
		if got := commentFlags(c.text); !slices.Equal(got, c.want) {
			t.Errorf("commentFlags(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
