package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// subcommands lists every command in the order help shows them.
func subcommands(kube *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) []*cobra.Command {
	return []*cobra.Command{
		newDoctorCommand(kube, streams, connect),
		newVPNTraceCommand(kube, streams, connect),
		newCleanupCommand(kube, streams, connect),
		newClientConfigCommand(kube, streams, connect),
		newClientCheckCommand(kube, streams, connect),
		newMonitorCommand(kube, streams, connect),
		newMigrateCommand(kube, streams, connect),
		newManifestsCommand(streams),
		newExplainCommand(streams),
		newVersionCommand(streams),
	}
}
