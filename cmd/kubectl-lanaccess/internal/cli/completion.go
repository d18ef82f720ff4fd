package cli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
)

// Completion of flag values. kubectl >= 1.26 asks a plugin for completions through an
// executable named kubectl_complete-lanaccess on PATH (shipped beside the plugin), which calls
// `kubectl lanaccess __complete ARGS...`: cobra answers with these functions.

// completeWords completes from a fixed list.
func completeWords(words ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, w := range words {
			if strings.HasPrefix(w, toComplete) {
				out = append(out, w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeChecks completes check IDs of command (and with codes, finding codes too) for
// --only/--skip, which take comma-separated lists.
func completeChecks(command string, codes bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		var out []string
		for _, e := range catalogue.ForCommand(command) {
			cands := []string{e.ID + "\t" + e.Title}
			if codes {
				for _, c := range e.Codes {
					cands = append(cands, c.Code+"\t"+c.Meaning)
				}
			}
			for _, c := range cands {
				if strings.HasPrefix(strings.ToUpper(c), strings.ToUpper(last)) {
					out = append(out, done+c)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// registerCheckCompletions completes the shared check flags of command.
func registerCheckCompletions(cmd *cobra.Command, command string) {
	for flag, fn := range map[string]func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective){
		"output":  completeWords("text", "json", "yaml", "junit"),
		"fail-on": completeWords("fail", "warn"),
		"color":   completeWords("auto", "always", "never"),
		"only":    completeChecks(command, false),
		"skip":    completeChecks(command, true),
	} {
		_ = cmd.RegisterFlagCompletionFunc(flag, fn) // the flags exist: registered by CheckFlags
	}
}

// registerKubeCompletions completes --context from the kubeconfig and -n from the cluster.
func registerKubeCompletions(root *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) {
	_ = root.RegisterFlagCompletionFunc("context", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		raw, err := kubeFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for name := range raw.Contexts {
			if strings.HasPrefix(name, toComplete) {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := connect(kubeFlags, 3*time.Second)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		l, err := c.typed.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 500})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, ns := range l.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				out = append(out, ns.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}
