// Command lab runs the kubectl-lanaccess lab: a real Kubernetes control plane whose nodes are
// Linux network namespaces on this machine (see lab/README.md).
//
//	go run ./lab/cmd/lab up|down|status|fault ...
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}
