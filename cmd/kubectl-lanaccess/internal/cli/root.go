// Package cli holds the cobra commands. Each command keeps raw input in a Flags struct,
// turns it into Options (Complete/Validate) and runs; there is no package-level state, and
// streams are injected so every command is testable.
package cli

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewRootCommand builds `kubectl lanaccess` with kubectl's standard flags.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRoot(streams, newClients)
}

// helpWidth is the width of every command's help (TestHelpFitsEightyColumns).
const helpWidth = 80

// clientFactory builds the API clients of one attempt; tests inject fake clientsets.
type clientFactory func(kube *kubeFlags, requestTimeout time.Duration) (*clients, error)

func newRoot(streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	kube := newKubeFlags()
	root := &cobra.Command{
		Use:   "kubectl-lanaccess",
		Short: "Diagnose LAN access (externalIPs + a zone CoreDNS) and OpenVPN forwarding",
		Long: `kubectl lanaccess tells you, in seconds, which layer of a LAN-access or in-cluster
VPN setup is broken and how to fix it: a verdict with evidence, not a pile of output.

  doctor      LAN access without a VPN client: Services with externalIPs,
              the zone CoreDNS, node listeners, and the DNS and HTTPS paths
              as a workstation sees them
  vpn-trace   an OpenVPN pod whose clients reach the tunnel peer and
              nothing beyond`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl lanaccess"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	kube.AddFlags(root.PersistentFlags())
	addLogFlags(root, streams.ErrOut)
	for _, sub := range subcommands(kube, streams, connect) {
		root.AddCommand(sub)
	}
	registerKubeCompletions(root, kube, connect)
	fitHelp(root)
	return root
}

// fitHelp makes every command's help fit helpWidth columns, as kubectl's does: flag
// descriptions wrap under their column, long descriptions are filled, and the closing line is
// shorter. The completion command is created here (cobra otherwise adds it when the command
// runs) so that its help is filled too.
func fitHelp(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	root.SetUsageTemplate(strings.NewReplacer(
		".LocalFlags.FlagUsages", "(.LocalFlags.FlagUsagesWrapped "+strconv.Itoa(helpWidth)+")",
		".InheritedFlags.FlagUsages", "(.InheritedFlags.FlagUsagesWrapped "+strconv.Itoa(helpWidth)+")",
		"for more information about a command.", "for more about a command.",
	).Replace(root.UsageTemplate()))
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		// cobra's completion help writes each install command on one line (tab-indented, up to
		// 103 columns): continue them before the redirection.
		c.Long = fill(completionRedirect.ReplaceAllString(c.Long, "completion $1 \\\n\t\t> "), helpWidth)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

var completionRedirect = regexp.MustCompile(`completion (bash|zsh|fish|powershell) > `)

// fill re-flows the paragraphs of text (separated by blank lines) to width columns; a
// paragraph with an indented line (a list, a command) is kept as written.
func fill(text string, width int) string {
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		if strings.Contains("\n"+p, "\n ") || strings.Contains(p, "\t") {
			continue
		}
		var b strings.Builder
		col := 0
		for word := range strings.FieldsSeq(p) {
			n := utf8.RuneCountInString(word)
			switch {
			case col == 0:
			case col+1+n > width:
				b.WriteByte('\n')
				col = 0
			default:
				b.WriteByte(' ')
				col++
			}
			b.WriteString(word)
			col += n
		}
		paras[i] = b.String()
	}
	return strings.Join(paras, "\n\n")
}
