// Package cli holds the cobra commands. Each command keeps raw input in a Flags struct,
// turns it into Options (Complete/Validate) and runs; there is no package-level state, and
// streams are injected so every command is testable.
package cli

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewRootCommand builds `kubectl lanaccess` with kubectl's standard flags.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRoot(streams, newClients)
}

// clientFactory builds the API clients of one attempt; tests inject fake clientsets.
type clientFactory func(kube *genericclioptions.ConfigFlags, requestTimeout time.Duration) (*clients, error)

func newRoot(streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	kube := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-lanaccess",
		Short: "Diagnose LAN access through externalIPs + a zone CoreDNS, and OpenVPN pods that forward nothing",
		Long: `kubectl lanaccess tells you, in seconds, which layer of a LAN-access or in-cluster VPN setup
is broken and how to fix it: a verdict with evidence, not a pile of output.

  doctor      LAN access without a VPN client: Services with externalIPs, the zone CoreDNS,
              node listeners, and the DNS and HTTPS paths as a workstation sees them
  vpn-trace   an OpenVPN pod whose clients reach the tunnel peer and nothing beyond`,
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
	return root
}
