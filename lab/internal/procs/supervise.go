package procs

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Supervise runs argv and starts it again whenever it exits, until ctx ends (then it sends the
// child SIGTERM and waits for it). It plays the kubelet restarting a DaemonSet's container:
// kube-proxy exits on purpose when its node's addresses or pod CIDRs change (kubernetes
// pkg/proxy/node.go NodeManager.OnNodeUpdate, "NodeIPs changed for the node"), and counts on
// being restarted. A child that ran less than stable waits backoff before its restart,
// doubled each time up to maxBackoff, as the kubelet's crash-loop back-off does.
func Supervise(ctx context.Context, argv []string, log io.Writer) error {
	const stable, first, maxBackoff = 10 * time.Second, time.Second, 10 * time.Second
	backoff := first
	for {
		started := time.Now()
		err := runOnce(ctx, argv)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) >= stable {
			backoff = first
		}
		_, _ = fmt.Fprintf(log, "supervise: %s exited (%v); restarting in %s\n", argv[0], err, backoff) // log, best effort
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// runOnce runs argv with this process's output until it exits or ctx ends.
func runOnce(ctx context.Context, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:gosec // the supervised program is the lab's own, from its spec
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			return <-done
		}
	}
}
