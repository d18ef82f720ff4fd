// Package netns runs commands inside the lab's network namespaces and builds the lab network
// (bridge, veth pairs, addresses, routes) with iproute2. Everything it creates carries a name
// from package layout so that teardown finds it again after a crash.
package netns

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds one iproute2/iptables invocation: they are local and fast, a hang means
// something is wrong and should surface as an error, not a stuck lab.
const DefaultTimeout = 20 * time.Second

// Command returns an exec.Cmd that runs argv inside namespace ns ("" = the root namespace).
// `ip netns exec` also bind-mounts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf, which is
// how nodes get their own resolver.
func Command(ctx context.Context, ns string, argv ...string) *exec.Cmd {
	// gosec G204: running its caller's argv is this function's job; argv is never a shell string.
	if ns == "" {
		return exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // see above
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...) //nolint:gosec // see above
}

// Run runs argv in ns and returns its standard output; the error carries stderr.
func Run(ctx context.Context, ns string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	cmd := Command(ctx, ns, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		where := ns
		if where == "" {
			where = "root namespace"
		}
		return stdout.String(), fmt.Errorf("%s (in %s): %w: %s", strings.Join(argv, " "), where, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// RunInput is Run with data on standard input (iptables-restore).
func RunInput(ctx context.Context, ns, input string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	cmd := Command(ctx, ns, argv...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s (in %s): %w: %s", strings.Join(argv, " "), ns, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
