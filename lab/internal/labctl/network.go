package labctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// PodsDevice is the bridge inside each node namespace that holds the pod IPs the API
// reports, so that they are real addresses.
const PodsDevice = "pods0"

// PublicDevice holds the "internet" namespace's public addresses.
const PublicDevice = "public0"

// BuildNetwork creates the bridge, every namespace, addresses and routes. There is no default
// route anywhere: each namespace only has routes to prefixes that live inside the lab.
func BuildNetwork(ctx context.Context, l layout.Layout) error {
	if err := netns.AddBridge(ctx, l.Bridge, l.Workstation+"/"+l.BridgeCIDR); err != nil {
		return err
	}
	for _, h := range l.Hosts() {
		if err := netns.Create(ctx, h.NS, l.InternetDNS); err != nil {
			return err
		}
		if err := netns.ConnectToBridge(ctx, l.Bridge, h.HostVeth, h.NS, h.LANIP+"/"+l.BridgeCIDR); err != nil {
			return err
		}
	}
	for _, n := range l.Nodes {
		if err := buildNode(ctx, l, n); err != nil {
			return fmt.Errorf("node %s: %w", n.NS, err)
		}
	}
	if err := buildInternet(ctx, l); err != nil {
		return err
	}
	// The workstation reaches the "internet" through the lab, never through the machine's real
	// default route: a probe of a public lab address stays inside.
	return netns.ReplaceRoute(ctx, "", l.InternetCIDR, l.Internet.LANIP)
}

func buildNode(ctx context.Context, l layout.Layout, n layout.Node) error {
	if err := netns.AddLocalBridge(ctx, n.NS, PodsDevice); err != nil {
		return err
	}
	// Every node forwards, like a Kubernetes node: shared nodes route DNAT'ed Service traffic
	// to pods elsewhere, a dedicated node also routes its pods' own namespaces. A pod's
	// ip_forward is its own namespace's (podruntime): the node's says nothing about it.
	if err := netns.Sysctl(ctx, n.NS, "net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	for _, other := range l.Nodes {
		if other.NS == n.NS {
			continue
		}
		if err := netns.ReplaceRoute(ctx, n.NS, other.PodCIDR, other.LANIP); err != nil {
			return err
		}
	}
	if err := netns.ReplaceRoute(ctx, n.NS, l.InternetCIDR, l.Internet.LANIP); err != nil {
		return err
	}
	// A node's own processes reach Service VIPs through the OUTPUT DNAT, but the kernel routes
	// a packet before that hook: without a route to the service range (real nodes have a
	// default route) sending fails with "network unreachable". The route points at the LAN, so
	// a VIP without endpoints goes unanswered, as on a real node.
	if _, err := netns.Run(ctx, n.NS, "ip", "route", "replace", l.ServiceCIDR, "dev", "eth0"); err != nil {
		return err
	}
	if !n.Dedicated {
		return AddReturnRoutes(ctx, l, []string{n.NS})
	}
	return nil
}

func buildInternet(ctx context.Context, l layout.Layout) error {
	if err := netns.AddLocalBridge(ctx, l.Internet.NS, PublicDevice); err != nil {
		return err
	}
	for _, ip := range []string{l.InternetDNS, l.InternetWeb, l.AppsPublicIP} {
		if err := netns.AddAddr(ctx, l.Internet.NS, PublicDevice, ip+"/32"); err != nil {
			return err
		}
	}
	return AddReturnRoutes(ctx, l, []string{l.Internet.NS})
}

// VPNNode is the dedicated node that carries the VPN pod.
func VPNNode(l layout.Layout) (layout.Node, error) {
	for _, n := range l.Nodes {
		if n.Dedicated {
			return n, nil
		}
	}
	return layout.Node{}, errors.New("layout has no dedicated VPN node")
}

// ReturnRouteHosts are the namespaces that route the VPN client pool back to the VPN node:
// without them (and without masquerade) replies to a VPN client never find the tunnel.
func ReturnRouteHosts(l layout.Layout) []string {
	var hosts []string
	for _, n := range l.Nodes {
		if !n.Dedicated {
			hosts = append(hosts, n.NS)
		}
	}
	return append(hosts, l.Internet.NS)
}

// AddReturnRoutes routes the VPN pool via the VPN node in the given namespaces.
func AddReturnRoutes(ctx context.Context, l layout.Layout, hosts []string) error {
	vpn, err := VPNNode(l)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		if err := netns.ReplaceRoute(ctx, h, l.VPNPool, vpn.LANIP); err != nil {
			return err
		}
	}
	return nil
}

// TeardownNetwork kills every process left in a lab namespace, then deletes the namespaces
// and the bridge. It works from names alone, so it also cleans up after a crash.
func TeardownNetwork(ctx context.Context, l layout.Layout) error {
	var errs []error
	existing, err := netns.List(ctx)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for _, n := range existing {
		present[n] = true
	}
	// The pods' own namespaces first: deleting them removes their veth ends from the nodes.
	var namespaces []string
	for _, n := range existing {
		if podruntime.IsPodNetNS(n) {
			namespaces = append(namespaces, n)
		}
	}
	for _, h := range l.Hosts() {
		namespaces = append(namespaces, h.NS)
	}
	var pids []int
	for _, ns := range namespaces {
		if !present[ns] {
			continue
		}
		p, err := netns.Pids(ctx, ns)
		if err != nil {
			errs = append(errs, err)
		}
		pids = append(pids, p...)
	}
	errs = append(errs, parallel(pids, func(pid int) error {
		if err := procs.Terminate(ctx, pid); err != nil {
			return fmt.Errorf("process %d: %w", pid, err)
		}
		return nil
	})...)
	for _, ns := range namespaces {
		if !present[ns] {
			continue
		}
		if err := netns.Delete(ctx, ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range l.Hosts() {
		// Deleting a namespace deletes its veth end and so the pair; this catches a pair whose
		// namespace was never created.
		if err := netns.DeleteLink(ctx, "", h.HostVeth); err != nil {
			errs = append(errs, err)
		}
		if err := removeResolverDir(h.NS); err != nil {
			errs = append(errs, err)
		}
	}
	if err := netns.DeleteLink(ctx, "", l.Bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
