package catalogue

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

var update = flag.Bool("update", false, "rewrite the catalogue pages (docs/catalogue) from the catalogue")

func TestEntriesAreWellFormed(t *testing.T) {
	ids := map[string]bool{}
	codes := map[string]bool{}
	for _, e := range All() {
		assert.False(t, ids[e.ID], "duplicate ID %s", e.ID)
		ids[e.ID] = true
		assert.NotEmpty(t, e.Title, e.ID)
		assert.NotEmpty(t, e.Section, e.ID)
		assert.NotEmpty(t, e.Proves, e.ID)
		assert.Contains(t, []string{Doctor, VPNTraceCmd, ClientCheck}, e.Command, e.ID)
		assert.NotEmpty(t, e.Codes, "%s declares no finding code", e.ID)
		for _, d := range e.DependsOn {
			dep := Get(d)
			assert.Equal(t, e.Command, dep.Command, "%s depends on %s of another command", e.ID, d)
		}
		for _, c := range e.Codes {
			assert.True(t, strings.HasPrefix(c.Code, e.ID+"-"), "%s is not a code of %s", c.Code, e.ID)
			assert.Regexp(t, `^[A-Z]+[0-9]{3}-[A-Z0-9]+(-[A-Z0-9]+)*$`, c.Code)
			assert.False(t, codes[c.Code], "duplicate code %s", c.Code)
			codes[c.Code] = true
			assert.NotEmpty(t, c.Meaning, c.Code)
		}
	}
}

// Every check's prose file belongs to a check, and says something on one paragraph.
func TestEveryProseFileIsACheck(t *testing.T) {
	files, err := provesFiles.ReadDir("proves")
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, e := range All() {
		ids[e.ID] = true
	}
	for _, cmd := range []string{Doctor, VPNTraceCmd, ClientCheck} {
		ids[NotStarted(cmd).ID] = true
	}
	assert.Len(t, files, len(ids), "one proves/ID.md per check and per command's not-started result")
	for _, f := range files {
		id, ok := strings.CutSuffix(f.Name(), ".md")
		assert.True(t, ok && ids[id], "proves/%s is no check's", f.Name())
		raw, err := provesFiles.ReadFile("proves/" + f.Name())
		require.NoError(t, err)
		assert.NotContains(t, strings.TrimSpace(string(raw)), "\n\n", "proves/%s: one paragraph (a table cell)", f.Name())
		assert.NotContains(t, string(raw), "|", "proves/%s: a | would end the table cell", f.Name())
	}
}

func TestEachCommandHasItsNotStartedResultOutsideItsChecks(t *testing.T) {
	for _, cmd := range []string{Doctor, VPNTraceCmd, ClientCheck} {
		e := NotStarted(cmd)
		assert.Equal(t, cmd, e.Command)
		assert.Equal(t, Run, e.Section)
		assert.NotEmpty(t, e.Proves, e.ID)
		assert.NotContains(t, IDs(ForCommand(cmd)), e.ID, "the runner never runs %s", e.ID)
	}
	assert.Equal(t, "LA000", NotStarted(Doctor).ID)
	assert.Panics(t, func() { NotStarted("monitor") })
}

func TestDependenciesComeEarlierInTheirCommand(t *testing.T) {
	for _, cmd := range []string{Doctor, VPNTraceCmd, ClientCheck} {
		seen := map[string]bool{}
		for _, e := range ForCommand(cmd) {
			for _, d := range e.DependsOn {
				assert.True(t, seen[d], "%s depends on %s, which comes later", e.ID, d)
			}
			seen[e.ID] = true
		}
	}
}

// codeLiteral is a full finding code in Go source; suffixLiteral the "-SUFFIX" a family appends
// to a check ID it was given ("-NO-ANSWER" in netpath's unreachable finding).
var (
	codeLiteral   = regexp.MustCompile(`^(LA|VPN|WS)[0-9]{3}-[A-Z0-9-]+$`)
	suffixLiteral = regexp.MustCompile(`^-[A-Z0-9]+(-[A-Z0-9]+)*$`)
)

// sourceLiterals reads the string literals of the non-test Go files of the check families.
func sourceLiterals(t *testing.T) (full map[string][]string, suffixes map[string]bool, partial map[string]bool) {
	t.Helper()
	c := sourceCodes{fset: token.NewFileSet(), full: map[string][]string{}, suffixes: map[string]bool{}, partial: map[string]bool{}}
	files, err := filepath.Glob(filepath.Join("..", "*", "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.Contains(path, string(filepath.Separator)+"catalogue"+string(filepath.Separator)) {
			continue
		}
		f, err := parser.ParseFile(c.fset, path, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, c.inspect)
	}
	return c.full, c.suffixes, c.partial
}

// sourceCodes is what Go source says of finding codes: full codes with where they are,
// "-SUFFIX" literals, and the check IDs given to engine.Partial (which emits ID-UNREAD).
type sourceCodes struct {
	fset     *token.FileSet
	full     map[string][]string
	suffixes map[string]bool
	partial  map[string]bool
}

func (c sourceCodes) inspect(n ast.Node) bool {
	if id, ok := partialID(n); ok {
		c.partial[id] = true
	}
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return true
	}
	v, err := strconv.Unquote(lit.Value)
	switch {
	case err != nil:
	case codeLiteral.MatchString(v):
		c.full[v] = append(c.full[v], c.fset.Position(lit.Pos()).String())
	case suffixLiteral.MatchString(v):
		c.suffixes[v] = true
	}
	return true
}

// partialID is the check ID of a call engine.Partial("LA102", ...), which emits LA102-UNREAD.
func partialID(n ast.Node) (string, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return "", false
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Partial" {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok {
		return "", false
	}
	id, err := strconv.Unquote(lit.Value)
	return id, err == nil
}

func TestEveryCodeInTheSourceIsDeclaredAndEveryDeclaredCodeIsEmitted(t *testing.T) {
	full, suffixes, partial := sourceLiterals(t)
	declared := map[string]bool{}
	for _, e := range All() {
		for _, c := range e.Codes {
			declared[c.Code] = true
			_, suffix, _ := strings.Cut(c.Code, "-")
			used := len(full[c.Code]) > 0 || suffixes["-"+suffix] || (suffix == "UNREAD" && partial[e.ID]) ||
				"-"+suffix == engine.MoreSuffix // the runner's own note
			assert.True(t, used, "%s is declared but no check emits it", c.Code)
		}
	}
	for code, where := range full {
		assert.True(t, declared[code], "%s (at %s) is not declared in the catalogue", code, where[0])
	}
}

func TestTheCataloguePagesAreTheCatalogue(t *testing.T) {
	for _, cmd := range []string{Doctor, VPNTraceCmd, ClientCheck} {
		path := filepath.Join("..", "..", filepath.FromSlash(PagePath(cmd)))
		want := Page(cmd)
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run make docs")
		assert.Equal(t, want, string(got), "%s drifted from the catalogue: run make docs", PagePath(cmd))
	}
}

func TestCheckCarriesTheEntry(t *testing.T) {
	c := Check("LA106", nil)
	e := Get("LA106")
	assert.Equal(t, e.Title, c.Title)
	assert.Equal(t, string(Configuration), c.Section)
	assert.True(t, slices.Contains(c.Codes, "LA106-ADMISSION"))
	assert.Equal(t, []string{"LA001"}, c.DependsOn)
	assert.Panics(t, func() { Get("LA999") })
}

// The catalogue is built once and shared: what a caller does with the entries it gets (appending
// a code, renaming an entry of All's slice) leaves the catalogue as it was.
func TestTheSharedCatalogueCannotBeChangedThroughWhatItHandsOut(t *testing.T) {
	e := Get("LA101")
	n := len(e.Codes)
	e.Codes = append(e.Codes, Code{Code: "LA101-EXTRA"})
	e.DependsOn = append(e.DependsOn, "LA999")
	all := All()
	all[0].ID = "XX000"
	again := Get("LA101")
	if len(again.Codes) != n || again.Declares("LA101-EXTRA") || slices.Contains(again.DependsOn, "LA999") || All()[0].ID == "XX000" {
		t.Fatalf("the catalogue changed through a copy: %+v", again)
	}
}
