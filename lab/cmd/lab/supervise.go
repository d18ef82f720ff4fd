package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// newSuperviseCommand runs a program and restarts it whenever it exits (procs.Supervise):
// how `up` runs each node's kube-proxy, which exits on purpose when its node's addresses change.
func newSuperviseCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "supervise -- PROGRAM [ARGS...]",
		Short:  "Run a program and restart it when it exits (started by up)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return procs.Supervise(ctx, args, os.Stderr)
		},
	}
}
