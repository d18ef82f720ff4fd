// Package archtest holds the test that keeps every import of the module pointing down: the
// commands (cmd/) on top, then the catalogue (checks/), then the libraries (pkg/); internal/
// holds test support beside pkg/, and lab/ sits above everything. .golangci.yml's depguard rules
// say the same for the linter; this test runs with the unit tests, so a backward import fails
// `go test ./...` before any lint runs.
package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/lanaccess/kubectl-lanaccess"

// testSupport are the internal/ packages that pkg/'s tests may import: fakes, fixtures and real
// servers for tests, none of which a library's non-test code may reach.
var testSupport = []string{
	"internal/corefiletest",
	"internal/fixture",
	"internal/kubetest",
	"internal/probetest",
	"internal/releasetest",
	"internal/workstationtest",
}

// rule forbids the files of one top-level folder (Go files, or only non-test files) to import
// the packages under some others.
type rule struct {
	from      string
	testFiles bool // the rule covers _test.go files too
	forbidden []string
	allowed   []string // exceptions under a forbidden folder
}

var rules = []rule{
	{from: "pkg", forbidden: []string{"checks", "cmd", "internal", "lab"}},
	{from: "pkg", testFiles: true, forbidden: []string{"checks", "cmd", "internal", "lab"}, allowed: testSupport},
	{from: "checks", testFiles: true, forbidden: []string{"cmd", "lab"}},
	{from: "checks", forbidden: []string{"internal"}}, // test support is for tests
	{from: "internal", testFiles: true, forbidden: []string{"cmd", "lab"}},
	{from: "cmd", testFiles: true, forbidden: []string{"lab"}},
	{from: "cmd", forbidden: []string{"internal"}},
}

// moduleImport is one import of a package of this module by one file.
type moduleImport struct {
	file string // slash path from the module root
	path string // the imported package, relative to the module root
}

func TestEveryImportPointsDown(t *testing.T) {
	imports := moduleImports(t, filepath.Join("..", ".."))
	require.NotEmpty(t, imports, "no import of the module's own packages was read")
	for _, r := range rules {
		for _, imp := range imports {
			if under(imp.file, r.from) && (r.testFiles || !strings.HasSuffix(imp.file, "_test.go")) {
				assert.False(t, r.breaks(imp.path), "%s imports %s: %s/ must not import %s/",
					imp.file, imp.path, r.from, strings.Join(r.forbidden, "/, "))
			}
		}
	}
}

func TestTheRuleCatchesABackwardImport(t *testing.T) {
	assert.True(t, rules[0].breaks("checks/config"))
	assert.True(t, rules[0].breaks("internal/fixture"), "non-test pkg/ code may not use test support")
	assert.False(t, rules[1].breaks("internal/fixture"), "pkg/ tests may use test support")
	assert.True(t, rules[1].breaks("internal/corednsrun"), "only the named test-support packages")
	assert.False(t, rules[0].breaks("pkg/kube"))
	assert.False(t, rules[0].breaks("checksum"), "a folder is matched whole, not as a prefix")
}

func (r rule) breaks(path string) bool {
	for _, f := range r.forbidden {
		if under(path, f) && !slices.ContainsFunc(r.allowed, func(a string) bool { return under(path, a) }) {
			return true
		}
	}
	return false
}

// under reports whether the slash path p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// moduleImports parses the import clause of every Go file below root (testdata and hidden
// folders left out, as the go tool does) and returns the imports of this module's packages.
func moduleImports(t *testing.T, root string) []moduleImport {
	t.Helper()
	var out []moduleImport
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
			if path != root && isModule(path) {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if own, ok := strings.CutPrefix(p, module+"/"); ok {
				out = append(out, moduleImport{file: filepath.ToSlash(rel), path: own})
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}
