package docstest

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the module root, from this package's folder.
var root = filepath.Join("..", "..")

// pages lists the Markdown files the docs are made of, as slash paths from the module root.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md", "CONTRIBUTING.md"}
	for _, glob := range []string{"docs/*.md", "docs/catalogue/*.md", "docs/cli/*.md"} {
		found, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(glob)))
		require.NoError(t, err)
		require.NotEmpty(t, found, glob)
		for _, f := range found {
			rel, err := filepath.Rel(root, f)
			require.NoError(t, err)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

func read(t *testing.T, page string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	require.NoError(t, err)
	return string(raw)
}

var (
	fence   = regexp.MustCompile("(?ms)^```.*?^```[ \t]*$")
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	notSlug = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// prose is a page without its fenced blocks (a link there is an example, not a link).
func prose(text string) string { return fence.ReplaceAllString(text, "") }

// anchors are the ids GitHub gives a page's headings: lower case, punctuation dropped, spaces
// as hyphens.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(prose(text), -1) {
		out[strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")] = true
	}
	return out
}

func TestEveryLinkLeadsSomewhere(t *testing.T) {
	for _, page := range pages(t) {
		text := read(t, page)
		for _, m := range link.FindAllStringSubmatch(prose(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = path.Join(path.Dir(page), file)
				_, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest)))
				if !assert.NoError(t, err, "%s links to %s, which does not exist", page, target) {
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") {
				assert.True(t, anchors(read(t, dest))[anchor], "%s links to %s: %s has no heading #%s", page, target, dest, anchor)
			}
		}
	}
}

func TestTheAnchorsAreGitHubs(t *testing.T) {
	a := anchors("# Quick start (a fresh Linux machine, as root)\n## RBAC and CI examples: `manifests`\n### The monitor's cost\n")
	assert.Equal(t, map[string]bool{"quick-start-a-fresh-linux-machine-as-root": true, "rbac-and-ci-examples-manifests": true, "the-monitors-cost": true}, a)
}

// The README's examples are the command pages' own, so that the two never tell different stories.
func TestTheREADMEExamplesAreTheCommandPages(t *testing.T) {
	readme := read(t, "README.md")
	examples := 0
	for _, block := range fence.FindAllString(readme, -1) {
		if !strings.Contains(block, "\n$ kubectl lanaccess ") {
			continue
		}
		examples++
		found := false
		for _, page := range []string{"docs/doctor.md", "docs/vpn-trace.md", "docs/replay.md"} {
			found = found || strings.Contains(read(t, page), block)
		}
		assert.True(t, found, "the README's example %q is on no command page", strings.SplitN(block, "\n", 3)[1])
	}
	assert.Equal(t, 3, examples, "the README shows one doctor, one vpn-trace and one replay example")
}
