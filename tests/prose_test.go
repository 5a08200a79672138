package tests

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
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
