package netpath

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The status fixes carry the probe host, which may come from a route someone else wrote: with
// any host, each printed line parses (bash) as comments and simple commands, and the host is one
// literal word of them.
func TestStatusFixesKeepTheHostOneWord(t *testing.T) {
	for _, host := range []string{"grafana.apps.example.com", "0;id>x;.apps.example.com", "a b\n$(id)`id`'\".apps.example.com"} {
		for _, got := range []int{200, 404, 500} {
			fix := statusFix(got, 302, host)
			f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(fix), "")
			require.NoError(t, err, fix)
			var words []string
			syntax.Walk(f, func(n syntax.Node) bool {
				switch n := n.(type) {
				case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ParamExp, *syntax.ArithmExp:
					t.Errorf("the fix expands something: %s", fix)
				case *syntax.CallExpr:
					for _, w := range n.Args {
						word, err := expand.Literal(&expand.Config{}, w)
						require.NoError(t, err, fix)
						words = append(words, word)
					}
				}
				return true
			})
			assert.Contains(t, words, host, "host %q status %d: %s", host, got, fix)
		}
	}
}
