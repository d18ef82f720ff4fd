package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
)

// explainEntries is every entry explain knows: each command's not-started result, then its
// checks, in catalogue order.
func explainEntries() []catalogue.Entry {
	out := make([]catalogue.Entry, 0, len(catalogue.All())+3)
	for _, command := range []string{catalogue.Doctor, catalogue.VPNTraceCmd, catalogue.ClientCheck} {
		out = append(out, catalogue.NotStarted(command))
		out = append(out, catalogue.ForCommand(command)...)
	}
	return out
}

// lookupExplain finds a check ID or a finding code (any case): the entry, and the code when a
// code was asked.
func lookupExplain(arg string) (catalogue.Entry, *catalogue.Code, bool) {
	want := strings.ToUpper(strings.TrimSpace(arg))
	for _, e := range explainEntries() {
		if e.ID == want {
			return e, nil, true
		}
		for i := range e.Codes {
			if e.Codes[i].Code == want {
				return e, &e.Codes[i], true
			}
		}
	}
	return catalogue.Entry{}, nil, false
}

func newExplainCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "explain ID|CODE",
		Short: "Explain a check or a finding code from the catalogue",
		Long: `explain prints what the catalogue says of a check (LA101, VPN002, WS001, LA000...): its
title, command and section, what its PASS proves, the checks it depends on and every finding
code it can report with its meaning; or, for a finding code (LA106-ADMISSION), that code's
meaning and then its check. IDs and codes are stable across releases.`,
		Example: `  kubectl lanaccess explain LA301
  kubectl lanaccess explain VPN002-OFF`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			es := explainEntries()
			ids := make([]string, 0, len(es))
			for _, e := range es {
				ids = append(ids, e.ID+"\t"+e.Title)
			}
			return ids, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			e, code, ok := lookupExplain(args[0])
			if !ok {
				return usageErr("%q is no check ID or finding code; the IDs: %s", args[0], strings.Join(catalogueIDs(), ", "))
			}
			return writeExplain(streams.Out, e, code)
		},
	}
}

func catalogueIDs() []string {
	return catalogue.IDs(explainEntries())
}

// writeExplain prints one entry, filled to helpWidth columns.
func writeExplain(w io.Writer, e catalogue.Entry, code *catalogue.Code) error {
	var b strings.Builder
	para := func(indent, text string) {
		for line := range strings.SplitSeq(fill(text, helpWidth-len(indent)), "\n") {
			b.WriteString(indent + line + "\n")
		}
	}
	if code != nil {
		para("", code.Code+": "+code.Meaning)
		b.WriteString("\n")
	}
	para("", e.ID+": "+e.Title)
	para("", fmt.Sprintf("command: %s · section: %s", e.Command, e.Section))
	if len(e.DependsOn) > 0 {
		para("", "runs after: "+strings.Join(e.DependsOn, ", ")+" (skipped when one of them did not pass)")
	}
	if e.Proves != "" {
		b.WriteString("\nWhat a PASS proves:\n")
		para("  ", e.Proves)
	}
	if len(e.Codes) > 0 {
		b.WriteString("\nFinding codes (silence one with --skip CODE):\n")
		for _, c := range e.Codes {
			b.WriteString("  " + c.Code + "\n")
			para("      ", c.Meaning)
		}
	}
	b.WriteString("\nAll checks: docs/catalogue/" + e.Command + ".md\n")
	_, err := io.WriteString(w, b.String())
	return err
}
