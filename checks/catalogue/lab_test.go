package catalogue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labTestSources are the lab's test files, read as text: a check proven in the lab is named in
// one of them.
func labTestSources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, pattern := range []string{"../../lab/e2e/*_test.go", "../../lab/internal/*/*_test.go"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			b.Write(raw)
		}
	}
	require.NotZero(t, b.Len())
	return b.String()
}

func TestEveryCheckSaysWhatTheLabProvesItOn(t *testing.T) {
	p := Lab()
	src := labTestSources(t)
	seen := map[string]bool{}
	for _, cmd := range []string{Doctor, VPNTraceCmd, ClientCheck} {
		for _, e := range ForCommand(cmd) {
			seen[e.ID] = true
			parts, ok := p.Checks[e.ID]
			if !assert.True(t, ok, "%s has no row in lab.yaml", e.ID) {
				continue
			}
			real := 0
			for _, c := range parts {
				_, isReal := p.Components[c]
				_, isStandin := p.Standins[c]
				assert.True(t, isReal || isStandin, "%s names %q, which is neither a component nor a stand-in of lab.yaml", e.ID, c)
				if isReal {
					real++
				}
			}
			if real > 0 {
				assert.Contains(t, src, e.ID, "%s says the lab proves it on real parts, but no lab test names it", e.ID)
			}
		}
	}
	for id := range p.Checks {
		assert.True(t, seen[id], "lab.yaml lists %s, which is no check", id)
	}
}
