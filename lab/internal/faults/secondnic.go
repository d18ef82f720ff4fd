package faults

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// SecondNIC is the interface AddSecondNIC gives a node.
const SecondNIC = "lan1"

// secondNICHost is the root-namespace end of a node's second NIC ("lab-n3" -> "lab-n3-lan1").
func secondNICHost(hostVeth string) string { return hostVeth + "-" + SecondNIC }

// AddSecondNIC plugs a second interface, lan1, into a node's LAN (a veth pair whose other end
// is enslaved to the LAN bridge, as the node's eth0) and gives it cidr: the node then owns an
// address that its status.addresses do not list, as a node with a second NIC on the LAN does.
func (f Lab) AddSecondNIC(ctx context.Context, node, cidr string) error {
	n, err := f.Layout.Node(node)
	if err != nil {
		return err
	}
	host := secondNICHost(n.HostVeth)
	steps := []struct {
		ns   string
		argv []string
	}{
		{"", []string{"ip", "link", "add", host, "type", "veth", "peer", "name", SecondNIC, "netns", n.NS}},
		{"", []string{"ip", "link", "set", host, "master", f.Layout.Bridge, "up"}},
		{n.NS, []string{"ip", "addr", "add", cidr, "dev", SecondNIC}},
		{n.NS, []string{"ip", "link", "set", SecondNIC, "up"}},
	}
	for _, s := range steps {
		if _, err := netns.Run(ctx, s.ns, s.argv...); err != nil {
			return fmt.Errorf("node %s: second NIC: %w", node, err)
		}
	}
	return nil
}

// RemoveSecondNIC unplugs AddSecondNIC's interface (deleting one end deletes the pair).
func (f Lab) RemoveSecondNIC(ctx context.Context, node string) error {
	n, err := f.Layout.Node(node)
	if err != nil {
		return err
	}
	if !netns.LinkExists(ctx, "", secondNICHost(n.HostVeth)) {
		return nil
	}
	return netns.DeleteLink(ctx, "", secondNICHost(n.HostVeth))
}

// SetExternalIPs writes a Service's externalIPs and returns the previous ones.
func (f Lab) SetExternalIPs(ctx context.Context, namespace, name string, ips []string) ([]string, error) {
	svcs := f.Client.CoreV1().Services(namespace)
	svc, err := svcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	prev := slices.Clone(svc.Spec.ExternalIPs)
	svc.Spec.ExternalIPs = ips
	_, err = svcs.Update(ctx, svc, metav1.UpdateOptions{})
	return prev, err
}
