package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// checkRead is one discovery read a check names (for Setup.Unread or UnreadReason).
type checkRead struct {
	check, group, resource, at string
}

// namedReads reads the reads the configuration checks name in their own files (laNNN_*.go):
// kube.ReadKey(group, resource, namespace) and kube.ReadKeysIn(namespace, "resource.group"...)
// with literal arguments. LA001 asks about every permission and is left out.
func namedReads(t *testing.T) []checkRead {
	t.Helper()
	files, err := filepath.Glob("la[0-9][0-9][0-9]_*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var out []checkRead
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "la001_") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		id := strings.ToUpper(path[:5])
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				out = append(out, readsOf(id, fset.Position(call.Pos()).String(), call)...)
			}
			return true
		})
	}
	return out
}

// readsOf is what one call names: kube.ReadKey's group and resource, or kube.ReadKeysIn's
// "resource.group" arguments, when they are literals.
func readsOf(id, at string, call *ast.CallExpr) []checkRead {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	var out []checkRead
	switch sel.Sel.Name {
	case "ReadKey":
		g, gok := stringLit(call, 0)
		r, rok := stringLit(call, 1)
		if gok && rok {
			out = append(out, checkRead{id, g, r, at})
		}
	case "ReadKeysIn":
		for i := 1; i < len(call.Args); i++ {
			if v, ok := stringLit(call, i); ok {
				r, g, _ := strings.Cut(v, ".")
				out = append(out, checkRead{id, g, r, at})
			}
		}
	}
	return out
}

// stringLit is the call's i-th argument when it is a string literal.
func stringLit(call *ast.CallExpr, i int) (string, bool) {
	if i >= len(call.Args) {
		return "", false
	}
	b, ok := call.Args[i].(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// Each read a check names to say what it did not see is one the permissions list grants for that
// check (pkg/manifests/permissions.go, which LA001 reviews and the shipped RBAC is held to): a
// check that starts reading something new fails here until the permission names it.
func TestEveryReadACheckNamesIsAPermissionForIt(t *testing.T) {
	reads := namedReads(t)
	require.NotEmpty(t, reads)
	for _, r := range reads {
		found := slices.ContainsFunc(manifests.Permissions(), func(p manifests.Permission) bool {
			return p.Group == r.group && p.Resource == r.resource && (p.Verb == "list" || p.Verb == "get") && slices.Contains(p.For, r.check)
		})
		assert.True(t, found, "%s reads %s (group %q) at %s, and no permission lists it for %s", r.check, r.resource, r.group, r.at, r.check)
	}
}
