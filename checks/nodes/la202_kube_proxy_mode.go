package nodes

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ipvsIssues are kubernetes' reports of the IPVS failure this check names: with externalIPs
// equal to node addresses, every node binds its peers' addresses on kube-ipvs0 and its own
// traffic to them never leaves it (pods, kubelet and API traffic; nodes go NotReady).
const ipvsIssues = "kubernetes/kubernetes#75290, #104679, #127410"

// KubeProxyMode is LA202: whatever implements Services must not make a node's peers'
// addresses local to it. kube-proxy's IPVS proxier binds every externalIP it does not find
// among the node's own addresses to the kube-ipvs0 dummy device (pkg/proxy/ipvs/proxier.go,
// "Capture externalIPs": shouldBind := !nodeAddressSet.Has(...)), on every node: with
// externalIPs = the nodes' LAN addresses, each node holds all its peers' addresses. The
// iptables and nftables proxiers only write DNAT rules; Cilium's kube-proxy replacement and
// Calico's eBPF dataplane translate in BPF and bind nothing. For Calico: felix/bpf/proxy/syncer.go
// (projectcalico/calico) apply writes each `svc.ExternalIPs()` as a derived frontend
// (applyDerived(svcTypeExternalIP) -> writeSvc) into the BPF NAT frontend map and nothing else;
// the syncer assigns no address to any device. That no other part of Felix binds externalIPs
// is assumed from its design (BPF programs on the interfaces, no Service device), not shown.
func KubeProxyMode(env *Env) engine.Check {
	return catalogue.Check("LA202", func(ctx context.Context) engine.Outcome { return kubeProxyMode(ctx, env) })
}

func kubeProxyMode(ctx context.Context, env *Env) engine.Outcome {
	s := env.Setup
	if s == nil || (s.ProxyService == nil && s.DNSService == nil) {
		return engine.Outcome{Skip: "neither the proxy nor the DNS Service was found (name them with --proxy-service/--dns-service)"}
	}
	ours := ourExternalIPs(s)
	owners := map[netip.Addr][]string{}
	if len(ours) > 0 {
		owners = statusOwners(s, ours)
	}
	var placed *noderead.NodeAddrs
	if ok, _ := env.Reader.Available(); ok {
		p := noderead.PlaceAddrs(ctx, env.Reader, s.Nodes, ours)
		placed = &p
		for a, pl := range p.Places {
			for _, o := range pl.Owners {
				if !slices.Contains(owners[a], o.Node) {
					owners[a] = append(owners[a], o.Node)
				}
			}
		}
	}
	findings := DataplaneFindings(s.Dataplane, owners)
	// On the nodes, any peer's address on kube-ipvs0 counts (another Service's externalIP on a
	// node address cuts node-to-node traffic the same way), not only ours.
	peers := statusOwners(s, nil)
	for a, names := range owners {
		for _, n := range names {
			if !slices.Contains(peers[a], n) {
				peers[a] = append(peers[a], n)
			}
		}
	}
	findings = append(findings, ObservedIPVSFindings(placed, peers, env.Reader)...)
	return engine.Outcome{Findings: findings}
}

// ourExternalIPs are the proxy's and the DNS Service's externalIPs, each once.
func ourExternalIPs(s *kube.Setup) []netip.Addr {
	var out []netip.Addr
	for _, svc := range [2]*corev1.Service{s.ProxyService, s.DNSService} {
		if svc == nil {
			continue
		}
		for _, raw := range svc.Spec.ExternalIPs {
			if a, err := netip.ParseAddr(raw); err == nil && !slices.Contains(out, a.Unmap()) {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// statusOwners maps each of addrs (nil: every node address) to the nodes whose
// status.addresses list it.
func statusOwners(s *kube.Setup, addrs []netip.Addr) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for i := range s.Nodes {
		for _, a := range noderead.NodeStatusAddrs(&s.Nodes[i]) {
			if addrs == nil || slices.Contains(addrs, a) {
				out[a] = append(out[a], s.Nodes[i].Name)
			}
		}
	}
	return out
}

// DataplaneFindings judges what the API shows of the dataplane; owners are our externalIPs
// that are node addresses, with the nodes that own them.
func DataplaneFindings(dp kube.Dataplane, owners map[netip.Addr][]string) []engine.Finding {
	var out []engine.Finding
	replaced := replacements(dp)
	for _, r := range replaced {
		out = append(out, engine.Finding{Code: "LA202-REPLACED", Severity: engine.SeverityInfo, Object: r.object,
			Message: r.what + ": Services are translated in BPF, no Service address is bound to an interface"})
	}
	for _, src := range dp.KubeProxy {
		out = append(out, sourceFinding(src, owners, len(replaced) > 0))
	}
	if len(dp.KubeProxy) == 0 && len(replaced) == 0 {
		out = append(out, engine.Finding{Code: "LA202-NOT-FOUND", Severity: engine.SeverityWarn,
			Message: "what implements Services could not be told: " + strings.Join(notFound(dp), "; "),
			Remediation: remedy.Commentf("# name the mode by hand: on a node, `ip -o addr show dev %s` lists addresses only in IPVS mode\n", noderead.IPVSDevice) +
				"# kube-proxy's own answer: curl -s http://127.0.0.1:10249/proxyMode (its metrics port, on the node)"})
	}
	if c := dp.Calico; c != nil && c.Unmodelled != "" {
		out = append(out, engine.Finding{Code: "LA202-UNMODELLED", Severity: engine.SeverityWarn, Object: c.Agent,
			Message:     c.Unmodelled,
			Remediation: "# on each node, check that no peer's address is local: `ip -o addr` lists only the node's own addresses"})
	}
	for _, why := range dp.Unread {
		out = append(out, engine.Finding{Code: "LA202-UNREAD", Severity: engine.SeverityWarn, Message: "not read: " + why})
	}
	return out
}

type replacement struct{ object, what string }

// replacements are the kube-proxy replacements that are on.
func replacements(dp kube.Dataplane) []replacement {
	var out []replacement
	if c := dp.Cilium; c != nil && c.ReplacesKubeProxy() {
		out = append(out, replacement{c.Object, "Cilium's kube-proxy replacement is on (kube-proxy-replacement=" + c.KubeProxyReplacement + ", which turns its externalIPs support on)"})
	}
	if c := dp.Calico; c != nil && c.BPF {
		out = append(out, replacement{c.Agent, "Calico's eBPF dataplane is on (" + c.From + "; its kube-proxy replacement writes externalIPs into BPF NAT maps, felix/bpf/proxy/syncer.go)"})
	}
	return out
}

// notFound says every place looked at, and what each showed.
func notFound(dp kube.Dataplane) []string {
	out := []string{"no DaemonSet in kube-system runs kube-proxy, no static pod labelled " + kube.KubeProxySelector +
		" runs it, no node carries k3s's node-args annotation, and there is no ConfigMap kube-system/kube-proxy"}
	switch c := dp.Cilium; {
	case c == nil:
		out = append(out, "no Cilium (no DaemonSet cilium, no ConfigMap cilium-config)")
	case !c.Present:
		out = append(out, c.Object+" was not read")
	default:
		out = append(out, fmt.Sprintf("%s has kube-proxy-replacement=%q: Cilium does not replace kube-proxy", c.Object, c.KubeProxyReplacement))
	}
	switch c := dp.Calico; {
	case c == nil:
		out = append(out, "no Calico (no DaemonSet calico-node)")
	case c.Unknown != "":
		out = append(out, c.Unknown)
	case c.Unmodelled != "":
		out = append(out, "Calico runs its VPP dataplane ("+c.From+"), which is not modelled")
	default:
		out = append(out, "Calico's eBPF dataplane is off ("+c.From+")")
	}
	return out
}

// sourceFinding judges one kube-proxy deployment.
func sourceFinding(src kube.ProxySource, owners map[netip.Addr][]string, replaced bool) engine.Finding {
	ev := map[string]any{"source": src.Object}
	if src.ModeFrom != "" {
		ev["modeFrom"] = src.ModeFrom
	}
	switch {
	case src.Disabled && replaced:
		return engine.Finding{Code: "LA202-MODE", Severity: engine.SeverityInfo, Object: src.Object, Evidence: ev,
			Message: "k3s runs without kube-proxy (--disable-kube-proxy); its replacement implements Services"}
	case src.Disabled:
		return engine.Finding{Code: "LA202-NOT-FOUND", Severity: engine.SeverityWarn, Object: src.Object, Evidence: ev,
			Message: "k3s runs without kube-proxy (--disable-kube-proxy) and no replacement (Cilium's, Calico's eBPF) is seen: what implements Services cannot be told"}
	case src.Unknown != "":
		return engine.Finding{Code: "LA202-MODE-UNKNOWN", Severity: engine.SeverityWarn, Object: src.Object, Evidence: ev,
			Message: "kube-proxy's mode cannot be told: " + src.Unknown}
	}
	mode := src.EffectiveMode()
	ev["mode"] = mode
	switch mode {
	case kube.ModeIPVS:
		return ipvsFinding(src, owners, ev)
	case kube.ModeIPTables, kube.ModeNFTables:
		return engine.Finding{Code: "LA202-MODE", Severity: engine.SeverityInfo, Object: src.Object, Evidence: ev,
			Message: fmt.Sprintf("kube-proxy runs in %s mode (%s): it writes DNAT rules for the externalIPs and binds no address, so each node keeps only its own", mode, src.ModeFrom)}
	}
	return engine.Finding{Code: "LA202-MODE-UNKNOWN", Severity: engine.SeverityWarn, Object: src.Object, Evidence: ev,
		Message: fmt.Sprintf("kube-proxy's mode %q (%s) is none of those it runs on Linux (%s): its configuration validation refuses it, so kube-proxy does not start", mode, src.ModeFrom, strings.Join(kube.KnownModes, ", "))}
}

// ipvsFinding judges IPVS mode: a FAIL when our externalIPs are node addresses.
func ipvsFinding(src kube.ProxySource, owners map[netip.Addr][]string, ev map[string]any) engine.Finding {
	held := make([]string, 0, len(owners))
	for _, a := range sortedAddrs(owners) {
		held = append(held, fmt.Sprintf("%s (%s)", a, strings.Join(owners[a], ", ")))
	}
	if len(held) == 0 {
		return engine.Finding{Code: "LA202-MODE", Severity: engine.SeverityInfo, Object: src.Object, Evidence: ev,
			Message: "kube-proxy runs in IPVS mode (" + src.ModeFrom + "): it binds the externalIPs on " + noderead.IPVSDevice + " on every node, none of them a node address"}
	}
	ev["nodeAddresses"] = held
	ev["reports"] = ipvsIssues
	return engine.Finding{Code: "LA202-IPVS-NODE-ADDRESSES", Severity: engine.SeverityFail, Object: src.Object, Evidence: ev,
		Message: fmt.Sprintf("kube-proxy runs in IPVS mode (%s): it binds every externalIP that is not a node's own address to %s on every node, so each node holds its peers' addresses %s as local ones, and its own traffic to its peers there (kubelet, API server, SSH, pods on the node network) never leaves it (%s)",
			src.ModeFrom, noderead.IPVSDevice, strings.Join(held, ", "), ipvsIssues),
		Remediation: switchModeFix(src)}
}

// switchModeFix sets iptables mode where the mode was read, then says how the addresses already
// bound go away: kube-proxy's IPVS cleanup deletes kube-ipvs0 (pkg/proxy/ipvs/proxier.go
// CleanupLeftovers: DeleteDummyDevice(defaultDummyDevice)).
func switchModeFix(src kube.ProxySource) string {
	head := "# iptables mode writes DNAT rules and binds no address (nftables mode, Kubernetes >= 1.31, does the same)\n"
	tail := remedy.Commentf("# the addresses already on %[1]s stay until kube-proxy's IPVS cleanup runs on each node (`kube-proxy --cleanup`, which deletes %[1]s) or the node reboots\n"+
		"# then on each node `ip -o addr show dev %[1]s` lists no peer's address", noderead.IPVSDevice)
	switch {
	case src.ConfigMap != "" && src.ConfigText != "":
		text, err := kube.SetKubeProxyMode(src.ConfigText, kube.ModeIPTables)
		if err != nil {
			break
		}
		ns, name, _ := strings.Cut(src.ConfigMap, "/")
		fix := head + remedyConfigMap(ns, name, src.Key, text)
		if src.Kind == "daemonset" {
			dsNS, dsName := objectName(src.Object)
			fix += "\n" + remedyRestart(dsNS, dsName)
		}
		return fix + "\n" + tail
	case src.Flag != nil && src.Kind == "daemonset":
		ns, name := objectName(src.Object)
		return head + remedyFlag(ns, name, *src.Flag) + "\n" + tail
	case src.Kind == "k3s":
		return head + "# k3s: in its config.yaml, kube-proxy-arg: [proxy-mode=iptables] (or drop the proxy-mode argument), then restart k3s on every node (not provable from here)\n" + tail
	}
	return head + remedy.Commentf("# set mode: iptables where %s takes its configuration (%s), then restart kube-proxy (not provable from here)\n", src.Object, src.ModeFrom) + tail
}

// objectName reads "Kind ns/name" back into its namespace and name.
func objectName(object string) (string, string) {
	_, ref, _ := strings.Cut(object, " ")
	ns, name, _ := strings.Cut(ref, "/")
	return ns, name
}

func sortedAddrs(m map[netip.Addr][]string) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}
