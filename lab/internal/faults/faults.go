// Package faults injects real, reversible faults into a running lab: each operation changes
// the kernel or the API the way the failure it stands for would, and has an inverse. labkit
// turns them into restore functions for tests; `lab fault` exposes them on the command line.
package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// Lab is a running lab to inject faults into.
type Lab struct {
	Layout layout.Layout
	Client kubernetes.Interface
}

// IPForward reads net.ipv4.ip_forward in a node namespace (the node's own: on the dedicated
// node the VPN pod's is VPNPodIPForward's).
func (f Lab) IPForward(ctx context.Context, node string) (bool, error) {
	if _, err := f.Layout.Node(node); err != nil {
		return false, err
	}
	v, err := netns.ReadSysctl(ctx, node, "net.ipv4.ip_forward")
	return v == "1", err
}

// SetIPForward writes net.ipv4.ip_forward in a shared node's namespace and returns the old
// value. The dedicated node's pods have namespaces of their own: a hand fix of the VPN pod is
// SetVPNPodIPForward.
func (f Lab) SetIPForward(ctx context.Context, node string, on bool) (bool, error) {
	if n, err := f.Layout.Node(node); err == nil && n.Dedicated {
		return false, fmt.Errorf("node %s's pods have network namespaces of their own: set the VPN pod's (SetVPNPodIPForward), not the node's", node)
	}
	prev, err := f.IPForward(ctx, node)
	if err != nil {
		return false, err
	}
	v := "0"
	if on {
		v = "1"
	}
	return prev, netns.Sysctl(ctx, node, "net.ipv4.ip_forward", v)
}

// SetLink takes a host's LAN link down or up (the bridge side of its veth: the node sees
// NO-CARRIER and keeps its routes, like an unplugged cable).
func (f Lab) SetLink(ctx context.Context, host string, up bool) error {
	for _, h := range f.Layout.Hosts() {
		if h.NS == host {
			return netns.SetLink(ctx, "", h.HostVeth, up)
		}
	}
	return fmt.Errorf("no lab host named %q", host)
}

// DropMasquerade deletes the VPN pool's MASQUERADE rules in the VPN pod and returns them so
// that RestoreNATRules can put them back.
func (f Lab) DropMasquerade(ctx context.Context) ([]string, error) {
	ns, err := f.VPNPodNS(ctx)
	if err != nil {
		return nil, err
	}
	out, err := netns.Run(ctx, ns, "iptables", "-t", "nat", "-S", "POSTROUTING")
	if err != nil {
		return nil, err
	}
	var removed []string
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "-A POSTROUTING") || !strings.Contains(line, "-s "+f.Layout.VPNPool) || !strings.Contains(line, "MASQUERADE") {
			continue
		}
		args := append([]string{"iptables", "-t", "nat", "-D"}, netns.SplitRule(line)[1:]...)
		if _, err := netns.Run(ctx, ns, args...); err != nil {
			return removed, err
		}
		removed = append(removed, line)
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("no MASQUERADE rule for %s in %s (is the VPN pod running?)", f.Layout.VPNPool, ns)
	}
	return removed, nil
}

// RestoreNATRules re-appends `iptables -S` lines to the VPN pod's nat table (those it lacks: a
// replaced pod's start script has added its own).
func (f Lab) RestoreNATRules(ctx context.Context, lines []string) error {
	ns, err := f.VPNPodNS(ctx)
	if err != nil {
		return err
	}
	for _, line := range lines {
		rule := netns.SplitRule(line)
		check := append([]string{"iptables", "-t", "nat", "-C"}, rule[1:]...)
		if _, err := netns.Run(ctx, ns, check...); err == nil {
			continue
		}
		args := append([]string{"iptables", "-t", "nat"}, rule...)
		if _, err := netns.Run(ctx, ns, args...); err != nil {
			return err
		}
	}
	return nil
}

// DropReturnRoutes removes the routes that send the VPN pool back to the VPN node; it returns
// the hosts that had one.
func (f Lab) DropReturnRoutes(ctx context.Context) ([]string, error) {
	var had []string
	for _, h := range labctl.ReturnRouteHosts(f.Layout) {
		ok, err := netns.HasRoute(ctx, h, f.Layout.VPNPool)
		if err != nil {
			return had, err
		}
		if !ok {
			continue
		}
		if err := netns.DelRoute(ctx, h, f.Layout.VPNPool); err != nil {
			return had, err
		}
		had = append(had, h)
	}
	return had, nil
}

// AddReturnRoutes puts return routes back in the given hosts (all when empty).
func (f Lab) AddReturnRoutes(ctx context.Context, hosts []string) error {
	if len(hosts) == 0 {
		hosts = labctl.ReturnRouteHosts(f.Layout)
	}
	return labctl.AddReturnRoutes(ctx, f.Layout, hosts)
}

// Poll runs check until it succeeds or timeout passes (then returns check's last error).
func Poll(ctx context.Context, timeout time.Duration, check func() error) error {
	return poll(ctx, timeout, check)
}

// poll runs check until it succeeds or timeout passes.
func poll(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
