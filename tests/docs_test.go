package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = ".."

// guaranteesDoc names, for each guarantee, the tests that prove it.
const guaranteesDoc = "docs/guarantees.md"

// referenceDocs are the docs that name tests besides guaranteesDoc. The
// notes under docs/notes are history and are not checked: a note keeps
// the names a test had when it was written.
var referenceDocs = []string{
	"README.md",
	"docs/design.md",
	"docs/performance.md",
	"cmd/kernfsim/README.md",
	"cmd/loadgen/README.md",
}

// benchmarkDocs are the reference docs whose Benchmark names are
// functions. Elsewhere such names are loadgen's output, not functions.
var benchmarkDocs = []string{"docs/design.md", "docs/performance.md"}

var (
	testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)\w*)\(`)
	codeSpanRE = regexp.MustCompile("`([^`\n]+)`")
	// testRefRE is a test named in a doc: an optional package path, the
	// function (or * for all of them) and optional subtest names.
	testRefRE = regexp.MustCompile(`^(?:([a-z][\w/]*)\.)?((?:Test|Fuzz|Benchmark)[A-Z]\w*|\*)((?:/[^/\s]+)*)$`)
	// subtestRE is a subtest named alone, such as RemoveSelfFromStore.
	subtestRE = regexp.MustCompile(`^[A-Z][a-z]\w*$`)
)

// testIndex holds, per package directory relative to the repository root,
// the test functions its _test.go files declare and their text.
type testIndex struct {
	funcs map[string][]string
	text  map[string]string
}

func indexTests(t *testing.T, root string) testIndex {
	t.Helper()
	idx := testIndex{funcs: map[string][]string{}, text: map[string]string{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		for _, m := range testFuncRE.FindAllStringSubmatch(string(b), -1) {
			idx.funcs[dir] = append(idx.funcs[dir], m[1])
		}
		idx.text[dir] += string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("indexing the tests under %s: %v", root, err)
	}
	return idx
}

// has reports whether package dir declares test function name; dir ""
// means any package.
func (idx testIndex) has(dir, name string) bool {
	if dir != "" {
		return slices.Contains(idx.funcs[dir], name)
	}
	for _, names := range idx.funcs {
		if slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// hasSubtest reports whether package dir's tests spell name as a string,
// as a table of subtests does.
func (idx testIndex) hasSubtest(dir, name string) bool {
	return strings.Contains(idx.text[dir], `"`+name+`"`)
}

// codeSpans returns the inline code spans of markdown text s, outside
// fenced code blocks.
func codeSpans(s string) []string {
	var spans []string
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
			spans = append(spans, m[1])
		}
	}
	return spans
}

// missingInGuarantees returns the tests that the table rows of doc name in
// their last cell and idx lacks. A name without a package belongs to the
// package named before it in the same cell.
func missingInGuarantees(doc string, idx testIndex) []string {
	var missing []string
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 2 {
			continue
		}
		pkg := ""
		for _, span := range codeSpans(cells[len(cells)-1]) {
			m := testRefRE.FindStringSubmatch(span)
			if m == nil {
				if subtestRE.MatchString(span) && (pkg == "" || !idx.hasSubtest(pkg, span)) {
					missing = append(missing, pkg+"."+span+" (a subtest)")
				}
				continue
			}
			if m[1] != "" {
				pkg = m[1]
			}
			switch {
			case pkg == "":
				missing = append(missing, span+" (no package)")
			case m[2] == "*":
				if _, ok := idx.funcs[pkg]; !ok {
					missing = append(missing, span+" (no tests in "+pkg+")")
				}
			case !idx.has(pkg, m[2]):
				missing = append(missing, pkg+"."+m[2])
			default:
				missing = append(missing, missingSubtests(pkg, m[2], m[3], idx)...)
			}
		}
	}
	return missing
}

// missingSubtests returns the plain names among subtest path sub
// ("/*/RemoveDrainsReads") that package pkg's tests never spell. Names
// with a pattern or a key=value are built at run time and not checked.
func missingSubtests(pkg, fn, sub string, idx testIndex) []string {
	var missing []string
	for _, part := range strings.Split(sub, "/") {
		if subtestRE.MatchString(part) && !idx.hasSubtest(pkg, part) {
			missing = append(missing, pkg+"."+fn+"/"+part+" (a subtest)")
		}
	}
	return missing
}

// missingInReference returns the tests and fuzz targets (and, with
// benchmarks, the benchmarks) named anywhere in doc's inline code that
// idx lacks. A name without a package may be in any package.
func missingInReference(doc string, benchmarks bool, idx testIndex) []string {
	var missing []string
	for _, span := range codeSpans(doc) {
		m := testRefRE.FindStringSubmatch(span)
		if m == nil || m[2] == "*" || (!benchmarks && strings.HasPrefix(m[2], "Benchmark")) {
			continue
		}
		if !idx.has(m[1], m[2]) {
			missing = append(missing, strings.TrimPrefix(m[1]+"."+m[2], "."))
		}
	}
	return missing
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

// TestDocsNameExistingTests checks that every test the docs name as
// evidence exists: a renamed or moved test must take its docs along.
func TestDocsNameExistingTests(t *testing.T) {
	idx := indexTests(t, repoRoot)
	doc := readDoc(t, guaranteesDoc)
	if n := strings.Count(doc, "`"); n < 100 {
		t.Fatalf("%s: got %d backticks, want a table naming tests", guaranteesDoc, n)
	}
	for _, name := range missingInGuarantees(doc, idx) {
		t.Errorf("%s names %s: no such test", guaranteesDoc, name)
	}
	for _, path := range referenceDocs {
		doc := readDoc(t, path)
		for _, name := range missingInReference(doc, slices.Contains(benchmarkDocs, path), idx) {
			t.Errorf("%s names %s: no such test", path, name)
		}
	}
}

// TestDocsCheckFindsMissingTests shows that the check above can fail: it
// runs the same checks on docs naming tests that do not exist.
func TestDocsCheckFindsMissingTests(t *testing.T) {
	idx := testIndex{
		funcs: map[string][]string{"kernfsim": {"TestTree", "TestTorture"}, "fusefs": {"TestRemoval"}},
		text:  map[string]string{"kernfsim": `{"RemoveDrainsReads", check}`},
	}
	guarantees := "| guarantee | test |\n|---|---|\n" +
		"| a | `kernfsim.TestTree/*/RemoveDrainsReads`, `RemoveSelfFromStore`, `fusefs.TestRemoval` |\n" +
		"| b | `kernfsim.TestTorture`, `TestGone`, `fusefs.*/transport=*`, `sysfs.*/x=*` |\n" +
		"| c | `TestNoPackage` |\n"
	want := []string{
		"kernfsim.RemoveSelfFromStore (a subtest)",
		"kernfsim.TestGone",
		"sysfs.*/x=* (no tests in sysfs)",
		"TestNoPackage (no package)",
	}
	if got := missingInGuarantees(guarantees, idx); !slices.Equal(got, want) {
		t.Errorf("missingInGuarantees: got %q, want %q", got, want)
	}
	reference := "See `kernfsim.TestTorture`, `TestRemoval`, `fusefs.TestTree`, `BenchmarkGone`.\n" +
		"```\nTestInAFence\n```\n"
	if got, want := missingInReference(reference, false, idx), []string{"fusefs.TestTree"}; !slices.Equal(got, want) {
		t.Errorf("missingInReference without benchmarks: got %q, want %q", got, want)
	}
	if got, want := missingInReference(reference, true, idx), []string{"fusefs.TestTree", "BenchmarkGone"}; !slices.Equal(got, want) {
		t.Errorf("missingInReference with benchmarks: got %q, want %q", got, want)
	}
}
