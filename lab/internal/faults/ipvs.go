package faults

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// IPVSDevice is the device kube-proxy's IPVS proxier binds Service addresses to
// (kubernetes pkg/proxy/ipvs/proxier.go defaultDummyDevice).
const IPVSDevice = "kube-ipvs0"

// This kernel has no dummy link type (LAB-NOTES), so kube-ipvs0 is one end of a veth pair, left
// down as kube-proxy leaves its dummy: an address on a down interface still gets its local
// route (net/ipv4/fib_frontend.c fib_add_ifaddr adds the RTN_LOCAL route before it looks at
// IFF_UP), which is all the symptom needs.
const ipvsPeer = IPVSDevice + "p"

// SetIPVSMode makes the lab's kube-proxy behave as the IPVS proxier does with externalIPs:
// every node binds each Service's externalIP that is not one of its own addresses to
// kube-ipvs0 ("Capture externalIPs": shouldBind := !nodeAddressSet.Has(...)), and kube-proxy's
// ConfigMap says mode: ipvs. Off removes kube-ipvs0 (what kube-proxy --cleanup does) and sets
// the mode back to iptables. IPVS itself cannot run here (no ip_vs in this kernel): the real
// kube-proxy keeps running in iptables mode underneath, so only the address binding, the part
// that makes the symptom, is the IPVS proxier's.
func (f Lab) SetIPVSMode(ctx context.Context, on bool) error {
	mode := "iptables"
	if on {
		mode = "ipvs"
	}
	if err := f.setKubeProxyMode(ctx, mode); err != nil {
		return err
	}
	ips, err := f.externalIPs(ctx)
	if err != nil {
		return err
	}
	for _, n := range f.Layout.Nodes {
		if err := f.ipvsNode(ctx, n.NS, n.LANIP, ips, on); err != nil {
			return fmt.Errorf("node %s: %w", n.NS, err)
		}
	}
	return nil
}

func (f Lab) ipvsNode(ctx context.Context, ns, own string, ips []netip.Addr, on bool) error {
	if netns.LinkExists(ctx, ns, IPVSDevice) {
		if err := netns.DeleteLink(ctx, ns, IPVSDevice); err != nil {
			return err
		}
	}
	if !on {
		return nil
	}
	if _, err := netns.Run(ctx, ns, "ip", "link", "add", IPVSDevice, "type", "veth", "peer", "name", ipvsPeer); err != nil {
		return err
	}
	owned, err := netns.Run(ctx, ns, "ip", "-o", "addr", "show")
	if err != nil {
		return err
	}
	for _, a := range ips {
		if a.String() == own || strings.Contains(owned, " "+a.String()+"/") {
			continue // the node's own address: kube-proxy does not bind it
		}
		bits := 32
		if a.Is6() {
			bits = 128
		}
		if err := netns.AddAddr(ctx, ns, IPVSDevice, fmt.Sprintf("%s/%d", a, bits)); err != nil {
			return err
		}
	}
	return nil
}

// externalIPs are the externalIPs of every Service, each once.
func (f Lab) externalIPs(ctx context.Context) ([]netip.Addr, error) {
	svcs, err := f.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, s := range svcs.Items {
		for _, raw := range s.Spec.ExternalIPs {
			if a, err := netip.ParseAddr(raw); err == nil && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// setKubeProxyMode writes mode into kube-system/kube-proxy's config.conf.
func (f Lab) setKubeProxyMode(ctx context.Context, mode string) error {
	cms := f.Client.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube-proxy's ConfigMap (lab/manifests/base/05-kube-proxy.yaml): %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.conf"]), &cfg); err != nil || cfg == nil {
		return fmt.Errorf("kube-proxy's config.conf does not parse: %v", err)
	}
	cfg["mode"] = mode
	text, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	cm.Data["config.conf"] = string(text)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// setKubeProxyGates writes featureGates into kube-system/kube-proxy's config.conf (removes
// them when gates is empty).
func (f Lab) setKubeProxyGates(ctx context.Context, gates map[string]bool) error {
	cms := f.Client.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube-proxy's ConfigMap (lab/manifests/base/05-kube-proxy.yaml): %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.conf"]), &cfg); err != nil || cfg == nil {
		return fmt.Errorf("kube-proxy's config.conf does not parse: %v", err)
	}
	if len(gates) == 0 {
		delete(cfg, "featureGates")
	} else {
		cfg["featureGates"] = gates
	}
	text, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	cm.Data["config.conf"] = string(text)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
