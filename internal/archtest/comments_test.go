package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A remediation's comment line that holds a value read from a cluster must escape it: a name
// holding a newline ends the comment, and pasting the fix runs the next line (issue 23: LA107's
// "middleware ... was not found" printed a tenant's reference as written). pkg/remedy's Comment
// and Commentf are the one constructor; this test refuses the two ways around them in the
// catalogue and the libraries:
//   - fmt.Sprintf("# ...", args...) or fmt.Fprintf(w, "# ...", args...): a formatted comment line;
//   - "# ..." + value, where the literal does not end its line before the value.
//
// A comment made only of constant text ("# restart it:\n" + fix) is fine.
const moduleRoot = "../.."

func TestCommentLinesAreBuiltByTheEscapingConstructor(t *testing.T) {
	var found []string
	for _, top := range []string{"checks", "pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(moduleRoot, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			if filepath.Dir(path) == filepath.Join(moduleRoot, "pkg", "remedy") {
				return nil // the constructor itself
			}
			if path == filepath.Join(moduleRoot, "checks", "catalogue", "catalogue.go") {
				return nil // Markdown pages: "# " is a heading there, not a shell comment
			}
			found = append(found, rawComments(t, path)...)
			return nil
		})
		require.NoError(t, err)
	}
	assert.Empty(t, found, "build these comment lines with remedy.Comment or remedy.Commentf")
}

func rawComments(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	rel, err := filepath.Rel(moduleRoot, path)
	require.NoError(t, err)
	at := func(n ast.Node) string {
		return filepath.ToSlash(rel) + ":" + strconv.Itoa(fset.Position(n.Pos()).Line)
	}
	var out []string
	inSum := map[ast.Node]bool{} // the inner sums of a sum already read
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			format := map[string]int{"Sprintf": 0, "Fprintf": 1}
			if i, ok := format[sel.Sel.Name]; ok && len(x.Args) > i+1 {
				if s, ok := stringLit(x.Args[i]); ok && formatsComment(s) {
					out = append(out, at(x))
				}
			}
		case *ast.BinaryExpr:
			if x.Op != token.ADD || inSum[x] {
				return true
			}
			for b := x; ; {
				inner, ok := ast.Unparen(b.X).(*ast.BinaryExpr)
				if !ok || inner.Op != token.ADD {
					break
				}
				inSum[inner], b = true, inner
			}
			if openCommentBeforeValue(flatten(x)) {
				out = append(out, at(x))
			}
		}
		return true
	})
	return out
}

// formatsComment: a line of the format is a shell comment with a verb in it.
func formatsComment(s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, "#") && strings.Contains(line, "%") {
			return true
		}
	}
	return false
}

// flatten lists the operands of a sum: a + b + c parses as (a + b) + c.
func flatten(e ast.Expr) []ast.Expr {
	if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return append(flatten(b.X), flatten(b.Y)...)
	}
	return []ast.Expr{ast.Unparen(e)}
}

// openCommentBeforeValue: a literal of the sum leaves a shell comment open ("# ..." with no
// newline after it) and a value that is not a literal follows on that line.
func openCommentBeforeValue(ops []ast.Expr) bool {
	line := "" // the current line's text so far, literals only; "?" after a value
	for _, op := range ops {
		s, ok := stringLit(op)
		if !ok {
			if strings.HasPrefix(line, "#") {
				return true
			}
			line += "?"
			continue
		}
		if i := strings.LastIndex(s, "\n"); i >= 0 {
			line = s[i+1:]
		} else if strings.HasPrefix(s, "#") {
			line = s // a value before it ended its line: a comment starts here
		} else {
			line += s
		}
	}
	return false
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
