package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Every command's help, the completion commands' included, fits 80 columns (tabs expanded to
// 8, display width, as a terminal shows it).
func TestHelpFitsEightyColumns(t *testing.T) {
	root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), nil)
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	require.Greater(t, len(paths), 10, "every command and the completion subcommands")
	for _, path := range paths {
		r := newRoot(genericiooptions.NewTestIOStreamsDiscard(), nil)
		var out bytes.Buffer
		r.SetOut(&out)
		r.SetArgs(append(append([]string{}, path...), "--help"))
		require.NoError(t, r.Execute(), "%v", path)
		require.NotEmpty(t, out.String(), "%v", path)
		for i, line := range strings.Split(out.String(), "\n") {
			w := runewidth.StringWidth(expandTabs(line))
			assert.LessOrEqual(t, w, helpWidth, "%q --help line %d: %q", strings.Join(path, " "), i+1, line)
		}
	}
}

func expandTabs(s string) string {
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col += runewidth.RuneWidth(r)
	}
	return b.String()
}

func TestFillKeepsIndentedParagraphsAndWrapsTheRest(t *testing.T) {
	in := "one two three four five\n\n  indented line that is long\nnext"
	assert.Equal(t, "one two\nthree four\nfive\n\n  indented line that is long\nnext", fill(in, 10))
	assert.Equal(t, "a-very-long-word\nb", fill("a-very-long-word b", 5), "a word longer than the width stands alone")
}
