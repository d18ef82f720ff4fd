package faults

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// The dual-stack variant: the LAN also carries IPv6 (fd00:10::/64, each host's IPv4 last byte as
// its IPv6 interface id: node-1 fd00:10::11, the laptop fd00:10::50), the seed nodes report
// their IPv6 address as a second InternalIP, both Services carry the IPv6 addresses in their
// externalIPs, and the zone answers AAAA with them ("on") or keeps answering NODATA
// ("no-aaaa"). The lab's cluster stays single-stack (service CIDR 10.96.0.0/16 only), as
// clusters that add IPv6 addresses to externalIPs often are: the API server accepts IPv6
// externalIPs on a single-stack IPv4 Service, and kube-proxy captures none of them (its IPv4
// proxier keeps the IPv4 ones, and there is no IPv6 proxier for a Service without an IPv6
// ClusterIP: kubernetes pkg/proxy/servicechangetracker.go serviceToServiceMap and
// serviceport.go newBaseServiceInfo, "Filter ExternalIPs to correct IP family"; the lab runs
// that kube-proxy).

// DualStackModes names the modes SetDualStack knows.
func DualStackModes() []string { return []string{"on", "no-aaaa", "off"} }

// lanIPv6Prefix is the LAN's IPv6 prefix; a host's address ends with its IPv4 last byte.
const lanIPv6Prefix = "fd00:10::"

// dualStackServices are the Services that carry the node addresses.
var dualStackServices = []string{"traefik", "lan-dns"}

// aaaaTemplate matches a `template IN AAAA { ... }` block, up to the line that closes it (its
// answers hold braces: "{{ .Name }}").
var aaaaTemplate = regexp.MustCompile(`(?m)^[ \t]*template IN AAAA \{\n(?:.*\n)*?[ \t]*\}\n`)

// WithoutAAAATemplate removes the zone's `template IN AAAA` blocks from a Corefile.
func WithoutAAAATemplate(corefile string) string { return aaaaTemplate.ReplaceAllString(corefile, "") }

// LANIPv6 is the IPv6 address of a lab host given its LAN IPv4 address (10.0.10.11 ->
// fd00:10::11).
func LANIPv6(ipv4 string) string {
	return lanIPv6Prefix + ipv4[strings.LastIndexByte(ipv4, '.')+1:]
}

// SetDualStack puts the lab in a dual-stack mode ("on", "no-aaaa") or takes it back to IPv4
// only ("off"); every step is idempotent. It returns when lan-dns has the new Corefile and
// kube-proxy programmed the Services.
func (f Lab) SetDualStack(ctx context.Context, mode string) error {
	if !slices.Contains(DualStackModes(), mode) {
		return fmt.Errorf("dual-stack mode %q: want one of %v", mode, DualStackModes())
	}
	on := mode != "off"
	var seed []string
	for _, n := range f.Layout.Nodes {
		if n.Dedicated {
			continue
		}
		seed = append(seed, LANIPv6(n.LANIP))
		if err := setHostIPv6(ctx, n.NS, LANIPv6(n.LANIP), on); err != nil {
			return err
		}
		if err := f.setNodeIPv6(ctx, n.NS, LANIPv6(n.LANIP), on); err != nil {
			return err
		}
	}
	if err := setHostIPv6(ctx, f.Layout.Laptop.NS, LANIPv6(f.Layout.Laptop.LANIP), on); err != nil {
		return err
	}
	for _, name := range dualStackServices {
		if err := f.setServiceIPv6(ctx, "traefik", name, seed, on); err != nil {
			return err
		}
	}
	_, err := f.EditConfigMap(ctx, "traefik", "lan-dns", "Corefile", func(s string) string {
		s = WithoutAAAATemplate(s)
		if mode != "on" {
			return s
		}
		var b strings.Builder
		b.WriteString("    template IN AAAA {\n")
		for _, ip := range seed {
			fmt.Fprintf(&b, "        answer \"{{ .Name }} 60 IN AAAA %s\"\n", ip)
		}
		b.WriteString("    }\n")
		return strings.Replace(s, "    template ANY ANY {", b.String()+"    template ANY ANY {", 1)
	})
	if err != nil {
		return err
	}
	return f.WaitProxySynced(ctx)
}

// setHostIPv6 adds (or removes) addr/64 on a namespace's LAN link, without duplicate address
// detection (the address is usable at once).
func setHostIPv6(ctx context.Context, ns, addr string, on bool) error {
	if err := netns.Sysctl(ctx, ns, "net.ipv6.conf.eth0.disable_ipv6", "0"); err != nil {
		return err
	}
	if on {
		_, err := netns.Run(ctx, ns, "ip", "-6", "addr", "replace", addr+"/64", "dev", "eth0", "nodad")
		return err
	}
	out, err := netns.Run(ctx, ns, "ip", "-6", "-o", "addr", "show", "dev", "eth0")
	if err != nil || !strings.Contains(out, " "+addr+"/64 ") {
		return err
	}
	_, err = netns.Run(ctx, ns, "ip", "-6", "addr", "del", addr+"/64", "dev", "eth0")
	return err
}

// setNodeIPv6 adds (or removes) addr as an InternalIP of the node's status, as a kubelet
// started with --node-ip=IPv4,IPv6 reports it.
func (f Lab) setNodeIPv6(ctx context.Context, name, addr string, on bool) error {
	nodes := f.Client.CoreV1().Nodes()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var kept []corev1.NodeAddress
	for _, a := range n.Status.Addresses {
		if a.Address != addr {
			kept = append(kept, a)
		}
	}
	if on {
		kept = append(kept, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: addr})
	}
	if len(kept) == len(n.Status.Addresses) && !on {
		return nil
	}
	n.Status.Addresses = kept
	_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// setServiceIPv6 appends the IPv6 addresses to a Service's externalIPs (or removes every IPv6
// one).
func (f Lab) setServiceIPv6(ctx context.Context, namespace, name string, addrs []string, on bool) error {
	svcs := f.Client.CoreV1().Services(namespace)
	s, err := svcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var ips []string
	for _, ip := range s.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(ip); err != nil || a.Is4() {
			ips = append(ips, ip)
		}
	}
	if on {
		ips = append(ips, addrs...)
	}
	if slices.Equal(ips, s.Spec.ExternalIPs) {
		return nil
	}
	s.Spec.ExternalIPs = ips
	_, err = svcs.Update(ctx, s, metav1.UpdateOptions{})
	return err
}
