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
	"strconv"
	"syscall"
)

func main() {
	markInheritedFDsCloseOnExec()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

// markInheritedFDsCloseOnExec keeps descriptors this process inherited (a lock held by a
// wrapper such as flock(1), a CI runner's pipes) out of the long-lived lab processes it
// starts: Go's exec passes on every descriptor not marked close-on-exec.
func markInheritedFDsCloseOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
