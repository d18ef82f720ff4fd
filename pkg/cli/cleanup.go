package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func newCleanupCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete helper pods that a killed run left behind (label app.kubernetes.io/managed-by=kubectl-lanaccess)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect(kubeFlags, 10*time.Second)
			if err != nil {
				return err
			}
			ns := namespaceGiven(cmd)
			if ns == "" {
				all = true
			}
			deleted, err := kube.Cleanup(cmd.Context(), c.typed, ns, all)
			var werr error
			for _, name := range deleted {
				if werr == nil {
					_, werr = fmt.Fprintf(streams.Out, "deleted pod %s\n", name)
				}
			}
			if err != nil {
				if werr != nil {
					err = errors.Join(err, fmt.Errorf("writing the output: %w", werr))
				}
				return &ExitError{Code: ExitUnevaluated, Err: err}
			}
			if len(deleted) == 0 {
				_, werr = fmt.Fprintln(streams.Out, "nothing to clean up")
			}
			if werr != nil {
				return &ExitError{Code: ExitUnevaluated, Err: fmt.Errorf("writing the output: %w", werr)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "look in every namespace (the default unless -n is given)")
	return cmd
}
