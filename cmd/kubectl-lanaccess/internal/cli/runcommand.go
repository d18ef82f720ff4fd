package cli

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runner is a command's validated options: what runs once the flags have been read.
type runner interface {
	Run(ctx context.Context, streams genericiooptions.IOStreams) error
}

// runFlags are the flags of a command that runs (doctor, vpn-trace, client-check...): added to the
// command, then turned into options (and validated) before anything runs.
type runFlags[O runner] interface {
	AddFlags(cmd *cobra.Command)
	ToOptions(cmd *cobra.Command, kubeFlags *genericclioptions.ConfigFlags, connect clientFactory) (O, error)
}

// runCommand is the one shape of the commands that run (doctor, vpn-trace, client-check,
// monitor, cleanup): flags parsed and validated into options (a bad value exits 2 before
// anything runs), then Run; --only/--skip complete from the command's part of the catalogue
// when it has one.
type runCommand struct {
	Use, Short, Long, Example string
	Catalogue                 string
}

func newRunCommand[O runner](c runCommand, f runFlags[O], kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     c.Use,
		Short:   c.Short,
		Long:    c.Long,
		Example: c.Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.ToOptions(cmd, kubeFlags, connect)
			if err != nil {
				return err
			}
			return o.Run(cmd.Context(), streams)
		},
	}
	f.AddFlags(cmd)
	if c.Catalogue != "" {
		registerCheckCompletions(cmd, c.Catalogue)
	}
	return cmd
}
