// Command kubectl-lanaccess is the kubectl plugin; `kubectl lanaccess` finds it on PATH.
package main

import (
	"context"
	"os"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/cli"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

func main() {
	if needsRoots(os.Args[1:]) && !systemHasRoots() {
		installFallbackRoots()
	}
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, cancel := cli.InterruptContext(context.Background(), streams.ErrOut, os.Interrupt, syscall.SIGTERM)
	err := cli.NewRootCommand(streams).ExecuteContext(ctx)
	cancel()
	if cli.Printable(err) {
		report.Error(streams.ErrOut, err)
	}
	os.Exit(cli.ExitCode(err))
}
