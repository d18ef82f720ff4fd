package manifests

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// assertPinned: every `uses:` names a commit (40 hex digits), never a tag or a branch.
func assertPinned(t *testing.T, content []byte) {
	t.Helper()
	uses := regexp.MustCompile(`(?m)^\s*(?:-\s*)?uses:\s*(\S+)`).FindAllStringSubmatch(string(content), -1)
	for _, u := range uses {
		if strings.HasPrefix(u[1], "./") {
			continue
		}
		assert.Regexp(t, `@[0-9a-f]{40}$`, u[1], "an action pinned to a commit")
	}
}

// compositeAction is the part of action.yml the test reads.
type compositeAction struct {
	Inputs map[string]struct {
		Required bool   `json:"required"`
		Default  string `json:"default"`
	} `json:"inputs"`
	Runs struct {
		Using string           `json:"using"`
		Steps []map[string]any `json:"steps"`
	} `json:"runs"`
}

// The repository's composite action (action.yml, `uses: lanaccess/kubectl-lanaccess@COMMIT`):
// its steps, as the job of a workflow whose inputs are the action's, pass actionlint (shell,
// expressions, the runner context); it downloads the archive of the runner's OS and
// architecture, checks it against checksums.txt, and pins any action it uses.
func TestTheRepositorysActionPassesActionlint(t *testing.T) {
	raw, err := os.ReadFile("../../action.yml")
	require.NoError(t, err)
	var a compositeAction
	require.NoError(t, yaml.Unmarshal(raw, &a))
	require.Equal(t, "composite", a.Runs.Using)
	require.Contains(t, a.Inputs, "version")
	require.Contains(t, a.Inputs, "args")
	assertPinned(t, raw)

	inputs := make([]string, 0, len(a.Inputs))
	steps := make([]string, 0, len(a.Runs.Steps))
	for name, in := range a.Inputs {
		inputs = append(inputs, fmt.Sprintf("      %s:\n        required: %t\n        default: %q\n        type: string\n", name, in.Required, in.Default))
	}
	slices.Sort(inputs)
	for _, s := range a.Runs.Steps {
		b, err := yaml.Marshal([]map[string]any{s})
		require.NoError(t, err)
		steps = append(steps, indentLines(string(b), "      "))
	}
	wf := "name: action\non:\n  workflow_dispatch:\n    inputs:\n" + strings.Join(inputs, "") +
		"permissions:\n  contents: read\njobs:\n  action:\n    runs-on: [self-hosted, linux]\n    steps:\n" + strings.Join(steps, "")
	errs := lintWorkflow(t, []byte(wf))
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, fmt.Sprintf("%d:%d %s [%s]", e.Line, e.Column, e.Message, e.Kind))
	}
	assert.Empty(t, msgs, "%s", wf)

	text := string(raw)
	for _, want := range []string{"${{ runner.arch }}", "${{ runner.os }}", "X64) arch=amd64", "ARM64) arch=arm64", "sha256sum -c -", "kubectl-lanaccess_${os}_${arch}.${ext}"} {
		assert.Contains(t, text, want)
	}
}

func indentLines(s, pad string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
