package netns

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// List returns the names of all network namespaces known to iproute2.
func List(ctx context.Context) ([]string, error) {
	out, err := Run(ctx, "", "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// Exists reports whether namespace ns exists.
func Exists(ctx context.Context, ns string) (bool, error) {
	names, err := List(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(names, ns), nil
}

// Create makes namespace ns with its loopback up and, if resolver is not empty, a resolv.conf
// that `ip netns exec` mounts for every process started in it.
func Create(ctx context.Context, ns, resolver string) error {
	if _, err := Run(ctx, "", "ip", "netns", "add", ns); err != nil {
		return err
	}
	if _, err := Run(ctx, ns, "ip", "link", "set", "lo", "up"); err != nil {
		return err
	}
	if resolver == "" {
		return nil
	}
	dir := filepath.Join("/etc/netns", ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("resolver dir for %s: %w", ns, err)
	}
	conf := fmt.Sprintf("# written by kubectl-lanaccess lab\nnameserver %s\n", resolver)
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(conf), 0o644); err != nil { //nolint:gosec // resolv.conf: every process in the namespace reads it, whatever its user
		return fmt.Errorf("resolv.conf for %s: %w", ns, err)
	}
	return nil
}

// Pids lists the processes living in namespace ns.
func Pids(ctx context.Context, ns string) ([]int, error) {
	out, err := Run(ctx, "", "ip", "netns", "pids", ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for f := range strings.FieldsSeq(out) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// Delete removes namespace ns and its resolver directory. Processes must be gone first or the
// namespace lingers (held open by them).
func Delete(ctx context.Context, ns string) error {
	if _, err := Run(ctx, "", "ip", "netns", "delete", ns); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join("/etc/netns", ns)); err != nil {
		return fmt.Errorf("resolver dir for %s: %w", ns, err)
	}
	return nil
}

// Sysctl writes a sysctl inside ns (per-namespace ones such as net.ipv4.ip_forward).
func Sysctl(ctx context.Context, ns, key, value string) error {
	_, err := Run(ctx, ns, "sysctl", "-q", "-w", key+"="+value)
	return err
}

// ReadSysctl reads a sysctl inside ns.
func ReadSysctl(ctx context.Context, ns, key string) (string, error) {
	out, err := Run(ctx, ns, "sysctl", "-n", key)
	return strings.TrimSpace(out), err
}
