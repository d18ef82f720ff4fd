package netpath

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// Target is one address a workstation may be given, with the Service port, and the node that
// carries it, named for findings.
type Target struct {
	Addr   netip.AddrPort
	Object string
}

// Path is the LAN path the probes walk: where to ask, what to expect, and what the fixes name.
// It is built once per run, from the discovered Setup (PathFromSetup) or from flags.
type Path struct {
	// DNS and HTTPS are the addresses of the DNS and proxy Services on their ports; when empty,
	// NoDNS and NoHTTPS say why (a SKIP reason).
	DNS, HTTPS     []Target
	NoDNS, NoHTTPS string
	// DNSObject and ProxyObject name the Services in findings ("Service lan-dns/lan-dns").
	DNSObject, ProxyObject string
	// Zone is the zone the path serves (zero when unknown).
	Zone zone.Zone
	// Host is the name the probes ask for, and where it came from. NoHost, when set, is why
	// no name worth asking is known (the HTTPS checks SKIP with it instead of probing the
	// zone apex).
	Host   proxyroute.ProbeHost
	NoHost string
	// Expected is what A answers must give: the DNS Service's IPv4 externalIPs, sorted;
	// ExpectedAAAA the IPv6 ones, which AAAA answers may give (dual stack) instead of NODATA.
	Expected, ExpectedAAAA []netip.Addr
	// Upstreams are the '.' block's forward targets ("/etc/resolv.conf", "10.0.0.2"), named
	// when forwarding fails; nil when not known.
	Upstreams []string
	// ZoneTemplate and ProxyAddrs are evidence beside Expected.
	ZoneTemplate, ProxyAddrs []netip.Addr
	// Fixes are the objects remediations name.
	Fixes Fixes
}

// Fixes names the objects the path checks' remediations act on; empty fields print placeholders.
type Fixes struct {
	ConfigMapNamespace, ConfigMap string
	DNSNamespace, DNSDeployment   string
	// DNSPolicy of the DNS pods ("" unknown).
	DNSPolicy string
}

// EditCorefile opens the ConfigMap that holds the Corefile.
func (f Fixes) EditCorefile() string { return remedy.EditConfigMap(f.ConfigMapNamespace, f.ConfigMap) }

// RestartDNS restarts the DNS pods so they all read the current Corefile.
func (f Fixes) RestartDNS() string { return remedy.RolloutRestart(f.DNSNamespace, f.DNSDeployment) }

// apexOutOfScope says why the zone apex is no probe host worth asking when discovery chose it
// only because it stayed in some namespaces and did not read the routes of the others ("" when
// it read them, or a route or --host gave the host): the apex is usually served by no route,
// so its 404 would be a FAIL of doctor's own making.
func apexOutOfScope(s *kube.Setup) string {
	if s.ProbeHost.Name == "" || s.ProbeHost.Route != "" || s.ProbeHost.Source == "--host" {
		return ""
	}
	var unread []string
	for _, k := range s.Skipped() {
		if strings.Contains(k, "ingress") || strings.Contains(k, "httproutes") || strings.Contains(k, "httpproxies") {
			unread = append(unread, k)
		}
	}
	if len(unread) == 0 {
		return ""
	}
	return fmt.Sprintf("needs --host: discovery stayed in namespace %s and did not read the routes of the others (%s), so no route gives the probe host, and the zone apex %s is usually served by none; give a host a route serves with --host, or read the whole cluster with -A",
		strings.Join(s.Scope, ", "), strings.Join(unread, ", "), s.Zone.String())
}

// PathFromSetup builds the path of a discovered setup.
func PathFromSetup(s *kube.Setup) Path {
	p := Path{
		Zone:   s.Zone,
		Host:   s.ProbeHost,
		NoHost: apexOutOfScope(s),
	}
	if s.ZoneAnswers.Known {
		p.ZoneTemplate = s.ZoneAnswers.Addrs()
	}
	p.NoDNS = "no DNS Service was found (name it with --dns-service)"
	if svc := s.DNSService; svc != nil {
		p.DNSObject = kubeobj.ServiceRef(svc)
		// Where the DNS is reachable in the form in use (issue 26): externalIPs, the nodes of its
		// hostPort pods (53 on the node), or its load-balancer addresses.
		r := s.DNSReachable()
		port := servicePort(svc, 53, "dns", "dns-udp", "dns-tcp")
		if r.Form == kube.FormHostPort {
			port = 53
		}
		p.DNS = addrTargets(r.Addrs(), port, s.Nodes)
		p.Expected, p.ExpectedAAAA = splitFamilies(probe.SortAddrs(r.Addrs()))
		p.NoDNS = p.DNSObject + " has no valid address (" + string(r.Form) + "): no address to ask (see LA101)"
		p.Fixes.DNSNamespace = svc.Namespace
	}
	p.NoHTTPS = "no proxy Service was found (name it with --proxy-service)"
	if svc := s.ProxyService; svc != nil {
		p.ProxyObject = kubeobj.ServiceRef(svc)
		r := s.ProxyReachable()
		port := servicePort(svc, 443, "websecure", "https")
		if r.Form == kube.FormHostPort {
			port = 443
		}
		p.HTTPS = addrTargets(r.Addrs(), port, s.Nodes)
		p.ProxyAddrs = probe.SortAddrs(r.Addrs())
		p.NoHTTPS = p.ProxyObject + " has no valid address (" + string(r.Form) + "): no address to dial (see LA101)"
	}
	if s.Corefile != nil {
		for _, b := range s.Corefile.BlocksServing(".", "") {
			p.Upstreams = append(p.Upstreams, b.Forwarders()...)
		}
	}
	if cm := s.ConfigMap; cm != nil {
		p.Fixes.ConfigMapNamespace, p.Fixes.ConfigMap = cm.Namespace, cm.Name
	}
	if w := s.DNSWorkload; w != nil {
		p.Fixes.DNSNamespace, p.Fixes.DNSDeployment = w.Namespace, w.Name
		p.Fixes.DNSPolicy = string(w.Spec.Template.Spec.DNSPolicy)
	}
	return p
}

// addrTargets are addrs on port, in order.
func addrTargets(addrs []netip.Addr, port uint16, nodes []corev1.Node) []Target {
	out := make([]Target, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, Target{Addr: netip.AddrPortFrom(a, port), Object: kubeobj.AddressObject(nodes, a)})
	}
	return out
}

// servicePort returns the Service port numbered want, else the first valid port named one of
// names, else want itself: the probe then tells what a workstation meets on the standard port.
func servicePort(svc *corev1.Service, want uint16, names ...string) uint16 {
	for _, p := range svc.Spec.Ports {
		if p.Port == int32(want) {
			return want
		}
	}
	for _, name := range names {
		for _, p := range svc.Spec.Ports {
			if n, ok := kube.PortNumber(p.Port); ok && p.Name == name {
				return n
			}
		}
	}
	return want
}

// hostEvidence adds the probe host and where it came from to a finding's evidence: every
// finding of LA301-LA403 carries both.
func (p *Path) hostEvidence(ev map[string]any) map[string]any {
	if ev == nil {
		ev = map[string]any{}
	}
	ev["probeHost"] = p.Host.Name
	ev["probeHostSource"] = p.Host.Source
	return ev
}

func targetAddrs(targets []Target) []netip.Addr {
	out := make([]netip.Addr, 0, len(targets))
	for _, t := range targets {
		out = append(out, t.Addr.Addr())
	}
	return out
}

func (t Target) String() string { return fmt.Sprintf("%s (%s)", t.Addr, t.Object) }

// splitFamilies returns the IPv4 and the IPv6 addresses of addrs.
func splitFamilies(addrs []netip.Addr) (v4, v6 []netip.Addr) {
	for _, a := range addrs {
		if a.Unmap().Is4() {
			v4 = append(v4, a.Unmap())
		} else {
			v6 = append(v6, a)
		}
	}
	return v4, v6
}

// upstreamText names the '.' block's upstream for messages.
func (p *Path) upstreamText() string {
	if len(p.Upstreams) == 0 {
		return "the '.' block's upstream"
	}
	return "the '.' block's upstream (forward . " + strings.Join(p.Upstreams, " ") + ")"
}
