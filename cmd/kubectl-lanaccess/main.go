// Command kubectl-lanaccess is the kubectl plugin; `kubectl lanaccess` finds it on PATH.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/pkg/cli"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

func main() {
	// The first Ctrl-C cancels the run (helpers are deleted, probes stop); a second one kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := cli.NewRootCommand(streams).ExecuteContext(ctx)
	if cli.Printable(err) {
		report.Error(streams.ErrOut, err)
	}
	stop()
	os.Exit(cli.ExitCode(err))
}
