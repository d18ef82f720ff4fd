package labkit

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// Exec runs argv inside a lab namespace (a node, "laptop", "internet", "control-plane"; ""
// = the workstation) and returns standard output. Failures are returned, not fatal: tests
// often expect a command to fail (a silent hop).
func (l *Lab) Exec(ctx context.Context, namespace string, argv ...string) (string, error) {
	return netns.Run(ctx, namespace, argv...)
}

// MustExec is Exec that fails the test on error.
func (l *Lab) MustExec(tb testing.TB, namespace string, argv ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := l.Exec(ctx, namespace, argv...)
	if err != nil {
		tb.Fatalf("exec in %s: %v", namespace, err)
	}
	return out
}

// Ping reports whether one ICMP echo from namespace to ip is answered within timeout.
func (l *Lab) Ping(namespace, ip string, timeout time.Duration) bool {
	secs := max(int(timeout.Round(time.Second)/time.Second), 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	defer cancel()
	_, err := l.Exec(ctx, namespace, "ping", "-n", "-c", "1", "-W", strconv.Itoa(secs), ip)
	return err == nil
}

// KubectlCmd returns the cached kubectl against the lab (the admin kubeconfig).
func (l *Lab) KubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, l.KubectlBin, args...) //nolint:gosec // the lab's own kubectl, with a test's arguments
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.Kubeconfig)
	return cmd
}

// Kubectl runs kubectl against the lab and returns its combined output.
func (l *Lab) Kubectl(ctx context.Context, args ...string) (string, error) {
	out, err := l.KubectlCmd(ctx, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
