package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// splitName reads "namespace/name" or "name" (in def).
func splitName(name, def string) (ns, n string) {
	if before, after, ok := strings.Cut(name, "/"); ok {
		return before, after
	}
	if name == "" {
		return "", ""
	}
	return def, name
}

// inScope reports whether ns is where the user asked to look.
func (d *discoverer) inScope(ns string) bool {
	return d.sel.AllNamespaces || d.sel.Namespace == "" || d.sel.Namespace == ns
}

func (d *discoverer) scopeText() string {
	if d.setup.Scope != nil {
		return " in " + namespacesText(d.setup.Scope)
	}
	if d.sel.AllNamespaces || d.sel.Namespace == "" {
		return " in any namespace"
	}
	return " in namespace " + d.sel.Namespace
}

// portProto is one Service port as kube-proxy matches it: a number and a protocol. kube-proxy
// captures an externalIP per port and protocol (`-d EXTERNAL_IP -p PROTOCOL --dport PORT`,
// kubernetes pkg/proxy/iptables/proxier.go syncProxyRules, "Capture externalIPs"): 443/UDP and
// 443/TCP are two different destinations, served by different rules.
type portProto struct {
	Port  int32
	Proto corev1.Protocol
}

func (p portProto) String() string { return fmt.Sprintf("%d/%s", p.Port, p.Proto) }

// serviceRole is what discovery looks for in a Service.
type serviceRole struct {
	name, flag string
	// any: a candidate exposes at least one of these; all: the Service of the setup exposes
	// every one of them (the proxy serves 80 and 443 over TCP; the DNS 53 over UDP and TCP).
	any, all []portProto
	// image is the word the image of the Service's pods names (traefik, coredns).
	image string
}

var (
	proxyRole = serviceRole{name: "proxy", flag: "--proxy-service", image: "traefik",
		any: []portProto{{443, corev1.ProtocolTCP}},
		all: []portProto{{80, corev1.ProtocolTCP}, {443, corev1.ProtocolTCP}}}
	dnsRole = serviceRole{name: "DNS", flag: "--dns-service", image: "coredns",
		any: []portProto{{53, corev1.ProtocolUDP}, {53, corev1.ProtocolTCP}},
		all: []portProto{{53, corev1.ProtocolUDP}, {53, corev1.ProtocolTCP}}}
)

func (r serviceRole) portsText() string { return joinPorts(r.any, " or ") }

// exposes reports whether svc has a port p (number and protocol).
func exposes(svc *corev1.Service, p portProto) bool {
	_, ok := kubeobj.ServicePortFor(svc, p.Port, p.Proto)
	return ok
}

func (r serviceRole) candidate(svc *corev1.Service) bool {
	return slices.ContainsFunc(r.any, func(p portProto) bool { return exposes(svc, p) })
}

func (r serviceRole) complete(svc *corev1.Service) bool {
	return !slices.ContainsFunc(r.all, func(p portProto) bool { return !exposes(svc, p) })
}

// pickServices finds the proxy and the DNS Services: the ones named, else the one Service with
// externalIPs exposing the role's port. When several do (a second Service claiming one of our
// addresses on 443, the interception LA106 reports), the Service of the setup is the one that
// serves all the role's ports on the other Service's addresses and selects pods running the
// role's image; the others are left to LA106.
func (d *discoverer) pickServices() error {
	proxy, proxyCands, err := d.namedOrCandidates(d.sel.ProxyService, proxyRole)
	if err != nil {
		return err
	}
	dns, dnsCands, err := d.namedOrCandidates(d.sel.DNSService, dnsRole)
	if err != nil {
		return err
	}
	// Two passes: a role left ambiguous may be settled by the other role's addresses.
	for range 2 {
		if proxy == nil {
			proxy = d.settle(proxyRole, proxyCands, dns)
		}
		if dns == nil {
			dns = d.settle(dnsRole, dnsCands, proxy)
		}
	}
	if proxy == nil {
		return d.ambiguity(proxyRole, proxyCands, dns)
	}
	if dns == nil {
		return d.ambiguity(dnsRole, dnsCands, proxy)
	}
	if !d.hasForm(proxy, proxyRole) && !d.hasForm(dns, dnsRole) {
		return &UsageError{
			Message: fmt.Sprintf("neither %s nor %s carries spec.externalIPs, so there are no LAN addresses to check (%s; %s)",
				kubeobj.ServiceRef(proxy), kubeobj.ServiceRef(dns), describeService(proxy), describeService(dns)),
			Candidates: describeServices(d.candidatesWithIPs(proxyRole, dnsRole)),
			Fix:        "name the Services that reach the node addresses: through spec.externalIPs, pods with hostPorts (a DaemonSet), or type LoadBalancer (k3s ServiceLB, Cilium node IPAM)",
		}
	}
	d.setup.ProxyService, d.setup.DNSService = proxy, dns
	return nil
}

// namedOrCandidates returns the Service named by name, else the candidates for role: the
// Services in scope with externalIPs that expose one of the role's ports.
func (d *discoverer) namedOrCandidates(name string, role serviceRole) (*corev1.Service, []*corev1.Service, error) {
	all := d.setup.Services
	var candidates []*corev1.Service
	for i := range all {
		if d.inScope(all[i].Namespace) && len(all[i].Spec.ExternalIPs) > 0 && role.candidate(&all[i]) {
			candidates = append(candidates, &all[i])
		}
	}
	if name == "" {
		if len(candidates) == 0 {
			candidates = d.formCandidates(role)
		}
		return nil, candidates, nil
	}
	def := ""
	if !d.sel.AllNamespaces {
		def = d.sel.Namespace
	}
	ns, n := splitName(name, def)
	var found []*corev1.Service
	for i := range all {
		if all[i].Name == n && (ns == "" || all[i].Namespace == ns) {
			found = append(found, &all[i])
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil, nil
	case len(found) > 1:
		return nil, nil, &UsageError{
			Message:    fmt.Sprintf("%d Services are named %q", len(found), n),
			Candidates: describeServices(found),
			Fix:        fmt.Sprintf("name the %s Service with %s NAMESPACE/%s", role.name, role.flag, n),
		}
	}
	where := " in any namespace"
	if ns != "" {
		where = " in namespace " + ns
		if err := d.setup.Unread(ReadKey("", "services", ns)); err != nil {
			return nil, nil, &UsageError{Message: fmt.Sprintf("cannot read Services in namespace %s: %v", ns, err), Fix: "grant list on services in " + ns}
		}
	}
	return nil, nil, &UsageError{
		Message:    fmt.Sprintf("%s Service %q not found%s", role.name, n, where),
		Candidates: describeServices(append(candidates, d.loadBalancers(role)...)),
		Fix:        "check the name given to " + role.flag,
	}
}

// settle returns the one candidate that is the Service of the setup, or nil: the only
// candidate; else the only one that exposes every port of the role, on the same addresses as
// partner (the other Service of the setup, when known), and selects pods running the role's
// image.
func (d *discoverer) settle(role serviceRole, candidates []*corev1.Service, partner *corev1.Service) *corev1.Service {
	if len(candidates) == 1 {
		return candidates[0]
	}
	fit := d.fitting(role, candidates, partner)
	if len(fit) == 1 {
		return fit[0]
	}
	return nil
}

// fitting keeps the candidates that meet every criterion of the role that can be judged.
func (d *discoverer) fitting(role serviceRole, candidates []*corev1.Service, partner *corev1.Service) []*corev1.Service {
	var out []*corev1.Service
	for _, c := range candidates {
		if !role.complete(c) {
			continue
		}
		if partner != nil && !sameAddresses(c, partner) {
			continue
		}
		if !d.selectsImage(c, role.image) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// sameAddresses: a and b claim the same set of externalIPs.
func sameAddresses(a, b *corev1.Service) bool {
	x, y := kubeobj.ExternalAddrs(a), kubeobj.ExternalAddrs(b)
	cmp := func(p, q netip.Addr) int { return p.Compare(q) }
	slices.SortFunc(x, cmp)
	slices.SortFunc(y, cmp)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// selectsImage reports whether svc selects pods one of whose containers runs an image whose
// name holds word ("traefik" matches docker.io/traefik:v3.1 and rancher/mirrored-library-traefik).
// The pods are listed for the candidates only, when discovery must tell several apart.
func (d *discoverer) selectsImage(svc *corev1.Service, word string) bool {
	key := svc.Namespace + "/" + svc.Name + " " + word
	if v, ok := d.runsImage[key]; ok {
		return v
	}
	v := d.podsRunImage(svc, word)
	d.runsImage[key] = v
	return v
}

func (d *discoverer) podsRunImage(svc *corev1.Service, word string) bool {
	if len(svc.Spec.Selector) == 0 {
		return false
	}
	for _, p := range d.podsOf(svc) {
		for _, c := range p.Spec.Containers {
			if kubeobj.ImageNames(c.Image, word) {
				return true
			}
		}
	}
	return false
}

// ambiguity is the usage error when no candidate, or several, are the role's Service.
func (d *discoverer) ambiguity(role serviceRole, candidates []*corev1.Service, partner *corev1.Service) error {
	fix := fmt.Sprintf("name the %s Service with %s NAMESPACE/NAME", role.name, role.flag)
	if len(candidates) == 0 {
		var withIPs []*corev1.Service
		for i := range d.setup.Services {
			if s := &d.setup.Services[i]; d.inScope(s.Namespace) && len(s.Spec.ExternalIPs) > 0 {
				withIPs = append(withIPs, s)
			}
		}
		lbs := d.loadBalancers(role)
		msg := fmt.Sprintf("no Service with externalIPs exposes %s%s (looking for the %s Service)", role.portsText(), d.scopeText(), role.name)
		if len(lbs) > 0 {
			msg += fmt.Sprintf("; %d LoadBalancer Service(s) expose it on load-balancer addresses instead (MetalLB or another load balancer): doctor checks the externalIPs setup, not that one", len(lbs))
		}
		if d.sel.Namespace != "" && !d.sel.AllNamespaces {
			fix += ", or search every namespace with --all-namespaces instead of -n"
		}
		return &UsageError{Message: msg, Candidates: describeServices(append(withIPs, lbs...)), Fix: fix}
	}
	msg := fmt.Sprintf("%d Services with externalIPs expose %s%s (looking for the %s Service)", len(candidates), role.portsText(), d.scopeText(), role.name)
	criteria := "none of them is the only one that exposes " + joinPorts(role.all, " and ")
	if partner != nil {
		criteria += " on the addresses of " + kubeobj.ServiceRef(partner)
	}
	criteria += fmt.Sprintf(" and selects pods running a %s image", role.image)
	msg += "; " + criteria
	if shared := sharedAddresses(candidates); len(shared) > 0 {
		msg += fmt.Sprintf("; they claim the same addresses (%s): if one is not yours, it may be intercepting this traffic (CVE-2020-8554, see LA106)", strings.Join(shared, ", "))
	}
	return &UsageError{Message: msg, Candidates: describeServices(candidates), Fix: fix}
}

// joinPorts is "53/UDP or 53/TCP" (sep " or ").
func joinPorts(ps []portProto, sep string) string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, sep)
}

// loadBalancers lists the Services in scope that expose one of the role's ports on a
// load-balancer address (type LoadBalancer, or an address in status) without externalIPs:
// what a MetalLB or kube-vip setup looks like, named so that the user sees why discovery did
// not take them.
func (d *discoverer) loadBalancers(role serviceRole) []*corev1.Service {
	var out []*corev1.Service
	for i := range d.setup.Services {
		s := &d.setup.Services[i]
		if !d.inScope(s.Namespace) || len(s.Spec.ExternalIPs) > 0 || !role.candidate(s) {
			continue
		}
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) > 0 || s.Spec.LoadBalancerIP != "" {
			out = append(out, s)
		}
	}
	return out
}

// candidatesWithIPs lists the Services in scope with externalIPs exposing a port of any role.
func (d *discoverer) candidatesWithIPs(roles ...serviceRole) []*corev1.Service {
	var out []*corev1.Service
	for i := range d.setup.Services {
		s := &d.setup.Services[i]
		if d.inScope(s.Namespace) && len(s.Spec.ExternalIPs) > 0 && slices.ContainsFunc(roles, func(r serviceRole) bool { return r.candidate(s) }) {
			out = append(out, s)
		}
	}
	return out
}

// sharedAddresses lists the externalIPs claimed by more than one of svcs.
func sharedAddresses(svcs []*corev1.Service) []string {
	count := map[string]int{}
	for _, s := range svcs {
		seen := map[string]bool{}
		for _, ip := range s.Spec.ExternalIPs {
			if !seen[ip] {
				seen[ip] = true
				count[ip]++
			}
		}
	}
	var out []string
	for ip, n := range count {
		if n > 1 {
			out = append(out, ip)
		}
	}
	sort.Strings(out)
	return out
}

// describeService is "ports 80/TCP,443/TCP; externalIPs a,b" with, for a LoadBalancer, its
// type and load-balancer addresses.
func describeService(s *corev1.Service) string {
	ports := make([]string, 0, len(s.Spec.Ports))
	for _, p := range s.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", p.Port, kubeobj.Protocol(p.Protocol)))
	}
	desc := "ports " + strings.Join(ports, ",")
	if len(s.Spec.ExternalIPs) > 0 {
		desc += "; externalIPs " + strings.Join(s.Spec.ExternalIPs, ",")
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		desc += "; type LoadBalancer"
	}
	var lb []string
	if s.Spec.LoadBalancerIP != "" {
		lb = append(lb, s.Spec.LoadBalancerIP)
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" && !slices.Contains(lb, in.IP) {
			lb = append(lb, in.IP)
		}
		if in.Hostname != "" {
			lb = append(lb, in.Hostname)
		}
	}
	if len(lb) > 0 {
		desc += "; load-balancer addresses " + strings.Join(lb, ",")
	}
	return desc
}

// describeServices lists candidates as "ns/name (ports 80/TCP,443/TCP; externalIPs a,b)".
func describeServices(svcs []*corev1.Service) []string {
	out := make([]string, 0, len(svcs))
	seen := map[string]bool{}
	for _, s := range svcs {
		desc := s.Namespace + "/" + s.Name + " (" + describeService(s) + ")"
		if !seen[desc] {
			seen[desc] = true
			out = append(out, desc)
		}
	}
	sort.Strings(out)
	return out
}

// pickDeployment returns the Deployment whose pod template the Service selects; with
// several, the one that owns most of the selected pods (through its ReplicaSets' names).
func pickDeployment(deps []appsv1.Deployment, selector labels.Selector, pods []corev1.Pod) *appsv1.Deployment {
	var best *appsv1.Deployment
	bestOwned := -1
	for i := range deps {
		dep := &deps[i]
		if !selector.Matches(labels.Set(dep.Spec.Template.Labels)) {
			continue
		}
		owned := 0
		for _, p := range pods {
			for _, ref := range p.OwnerReferences {
				if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.Name, dep.Name+"-") {
					owned++
				}
			}
		}
		if owned > bestOwned || (owned == bestOwned && dep.Name < best.Name) {
			best, bestOwned = dep, owned
		}
	}
	return best
}

// maxFormCandidates bounds the pod lists read to tell which Services without externalIPs are
// reached through hostPorts: one list per candidate.
const maxFormCandidates = 16

// formCandidates are the Services in scope that reach the role's port without externalIPs
// (issue 26): type LoadBalancer with an address in status, or a Service whose pods map one of
// the role's ports as a hostPort. Read only when no Service with
// externalIPs is a candidate, so today's setups are found as before.
func (d *discoverer) formCandidates(role serviceRole) []*corev1.Service {
	var out []*corev1.Service
	read := 0
	for i := range d.setup.Services {
		s := &d.setup.Services[i]
		if !d.inScope(s.Namespace) || !role.candidate(s) {
			continue
		}
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && hasIngressIP(s) {
			out = append(out, s)
			continue
		}
		if len(s.Spec.Selector) == 0 || read >= maxFormCandidates {
			continue
		}
		read++
		if mapsRolePorts(d.podsOf(s), role) {
			out = append(out, s)
		}
	}
	return out
}

func hasIngressIP(s *corev1.Service) bool {
	return slices.ContainsFunc(s.Status.LoadBalancer.Ingress, func(in corev1.LoadBalancerIngress) bool { return in.IP != "" })
}

// hasForm reports whether svc reaches the LAN in a form doctor models.
func (d *discoverer) hasForm(svc *corev1.Service, role serviceRole) bool {
	switch {
	case len(svc.Spec.ExternalIPs) > 0:
		return true
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer && hasIngressIP(svc):
		return true
	}
	return len(svc.Spec.Selector) > 0 && mapsRolePorts(d.podsOf(svc), role)
}

// podsOf lists the pods svc selects, once per Service (nil when unreadable).
func (d *discoverer) podsOf(svc *corev1.Service) []corev1.Pod {
	key := svc.Namespace + "/" + svc.Name
	if pods, ok := d.selected[key]; ok {
		return pods
	}
	pods, err := listPods(d.ctx, d.client, svc.Namespace, labels.SelectorFromSet(svc.Spec.Selector).String())
	if err != nil {
		pods = nil
	}
	d.selected[key] = pods
	return pods
}
