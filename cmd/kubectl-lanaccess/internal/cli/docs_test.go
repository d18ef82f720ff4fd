package cli

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// -update is the flag of every generated page's test (checks/catalogue's too), so that one
// command, `make docs`, rewrites them all.
var updateDocs = flag.Bool("update", false, "rewrite the generated reference pages (docs/man, docs/cli)")

// The generated reference: a man page and a Markdown page per command, from the commands
// themselves with cobra's doc generator.
var (
	manDir = filepath.Join("..", "..", "..", "..", "docs", "man")
	mdDir  = filepath.Join("..", "..", "..", "..", "docs", "cli")
)

// manDate is the date field of a man page's .TH line. The pages carry none: they change with the
// commands, not with the calendar (`kubectl lanaccess version` names the build).
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*") "[^"]*"`)

// referencePages renders the reference of every available command, by file name.
func referencePages(t *testing.T) (man, md map[string]string) {
	t.Helper()
	// Flag defaults that come from the environment are written as kubectl's own reference
	// writes them: $HOME, not this machine's home.
	t.Setenv("HOME", "$HOME")
	t.Setenv("KUBECACHEDIR", "")
	t.Setenv("KUBECONFIG", "")
	root := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	root.InitDefaultCompletionCmd()
	man, md = map[string]string{}, map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
		base := strings.ReplaceAll(c.CommandPath(), " ", "-")
		var b bytes.Buffer
		require.NoError(t, doc.GenMan(c, &doc.GenManHeader{Section: "1", Source: "kubectl-lanaccess", Manual: "kubectl-lanaccess manual"}, &b))
		man[base+".1"] = manDate.ReplaceAllString(b.String(), `$1 ""`)
		b.Reset()
		require.NoError(t, doc.GenMarkdownCustom(c, &b, func(name string) string { return name }))
		md[strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"] = b.String()
	}
	walk(root)
	return man, md
}

func TestTheReferencePagesAreTheCommands(t *testing.T) {
	man, md := referencePages(t)
	require.Contains(t, man, "kubectl-lanaccess-doctor.1")
	require.Contains(t, md, "kubectl_lanaccess_vpn-trace.md")
	for dir, pages := range map[string]map[string]string{manDir: man, mdDir: md} {
		if *updateDocs {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for name, text := range pages {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
			}
			continue
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err, "run make docs")
		var onDisk []string
		for _, e := range entries {
			onDisk = append(onDisk, e.Name())
		}
		var want []string
		for name := range pages {
			want = append(want, name)
		}
		sort.Strings(want)
		assert.Equal(t, want, onDisk, "%s holds other pages than the commands': run make docs", dir)
		for name, text := range pages {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if assert.NoError(t, err, "run make docs") {
				assert.Equal(t, text, string(got), "%s drifted from the command: run make docs", filepath.Join(dir, name))
			}
		}
	}
}
