package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// The k8s_gateway plugin (ori-edge/k8s_gateway, built into its own CoreDNS image) answers a
// zone from API objects, not from the Corefile: setup.go parse (its zones are its arguments,
// else the server block's keys; options resources, fallthrough, apex, ttl...), gateway.go
// ServeDNS (the name asked, and the name without the zone, are looked up in each resource's
// hostname index in order, stopping at the first that has addresses; none: NXDOMAIN for A, the
// SOA for the apex, unless fallthrough), kubernetes.go (an Ingress is indexed by its
// spec.rules[].host and answers the IPs of its status.loadBalancer.ingress; LoadBalancer
// Services and Gateway API routes by other keys). Modelled here: the names workstations ask
// (Setup.AskedNames) matched by Ingresses only, whose status holds IP addresses. A name a
// Service or an HTTPRoute may match, a status with a hostname, fallthrough, or an image that is
// not k8s_gateway's leave the answers unknown, and say why.

// k8sGatewayPlugin is the k8s_gateway entry that takes the zone's names on port (the plugin
// the query model stops at for a label of the zone), nil when none does.
func k8sGatewayPlugin(cf *corefile.Corefile, zone, port string) *corefile.Plugin {
	o := cf.Query(corefile.Question{Name: "lanaccess-zone-probe." + zone, Type: dns.TypeA, Port: port})
	if o.By == nil || o.By.Name != "k8s_gateway" || o.Block == nil {
		return nil
	}
	zones := o.By.Args
	if len(zones) == 0 {
		zones = o.Block.Zones()
	}
	for _, z := range zones {
		if dns.IsSubDomain(dns.Fqdn(strings.ToLower(z)), zone) {
			return o.By
		}
	}
	return nil
}

// K8sGatewayZones are the zones of the Corefile's k8s_gateway entries (their arguments), for
// discovery to take the zone from when no template names one.
func K8sGatewayZones(cf *corefile.Corefile) []string {
	var out []string
	for i := range cf.Blocks {
		for _, p := range cf.Blocks[i].Plugins {
			if p.Name != "k8s_gateway" {
				continue
			}
			for _, z := range p.Args {
				z = dns.Fqdn(strings.ToLower(z))
				if z != "." && !slices.Contains(out, z) {
					out = append(out, z)
				}
			}
		}
	}
	return out
}

// k8sGatewayAnswers fills z from what k8s_gateway answers the names workstations ask; it
// reports false when the zone is not k8s_gateway's.
func (s *Setup) k8sGatewayAnswers(z *ZoneAnswers) bool {
	p := k8sGatewayPlugin(s.Corefile, s.Zone.FQDN(), z.Port)
	if p == nil {
		return false
	}
	z.By = p
	z.Object = kubeobj.ConfigMapRef(s.ConfigMap) + " (zone " + s.Zone.FQDN() + ", answered by k8s_gateway from the API)"
	image := ""
	spec := kubeobj.PodSpecOf(nil, s.DNSPods)
	if s.DNSWorkload != nil {
		spec = &s.DNSWorkload.Spec.Template.Spec
	}
	if c := CoreDNSContainer(spec); c != nil {
		image = c.Image
	}
	switch {
	case !kubeobj.ImageNames(image, "k8s_gateway"):
		z.Why = fmt.Sprintf("the zone is answered by k8s_gateway (%s), and the DNS pods run %q, not k8s_gateway's image: what it answers is not modelled", p.Where(), image)
		return true
	case k8sGatewayOption(p, "fallthrough") || k8sGatewayOption(p, "resources"):
		z.Why = fmt.Sprintf("k8s_gateway at %s sets fallthrough or resources: its answers are not modelled", p.Where())
		return true
	}
	names := s.AskedNames()
	var ref []netip.Addr
	refName := ""
	for _, n := range names {
		addrs, why := s.k8sGatewayAddrs(n)
		if why != "" {
			z.Why = fmt.Sprintf("k8s_gateway (%s) answers %s from %s", p.Where(), strings.TrimSuffix(n, "."), why)
			return true
		}
		if len(addrs) == 0 {
			continue // NXDOMAIN: no object names it
		}
		if refName != "" && !slices.Equal(addrs, ref) {
			z.Why = fmt.Sprintf("k8s_gateway (%s) answers the names of the zone with different addresses: %s %s, %s %s", p.Where(), strings.TrimSuffix(refName, "."), addrText(ref), strings.TrimSuffix(n, "."), addrText(addrs))
			return true
		}
		ref, refName = addrs, n
	}
	for _, a := range ref {
		if !a.Is4() {
			z.Why = fmt.Sprintf("k8s_gateway (%s) answers %s with an IPv6 address: its AAAA answers are not modelled", p.Where(), strings.TrimSuffix(refName, "."))
			return true
		}
		z.Answers = append(z.Answers, corefile.Answer{Static: true, OwnerIsQueryName: true, Type: "A", Addr: a, Data: a.String(), Line: p.Line,
			Record: fmt.Sprintf("%s IN A %s", refName, a)})
	}
	z.Known, z.Why, z.ByName = true, "", names
	if len(names) > 0 {
		z.Name = names[0]
	}
	return true
}

// k8sGatewayAddrs is what k8s_gateway answers A for name: the IPs of the status of the Ingresses
// whose rules name it (or name it without the zone); why says what the model cannot tell.
func (s *Setup) k8sGatewayAddrs(name string) ([]netip.Addr, string) {
	host := strings.TrimSuffix(name, ".")
	short := strings.TrimSuffix(strings.TrimSuffix(host, s.Zone.String()), ".")
	keys := []string{host}
	if short != "" && short != host {
		keys = append(keys, short)
	}
	for _, svc := range s.Services {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			return nil, "its LoadBalancer Services, which the model does not read for k8s_gateway"
		}
	}
	for _, hr := range s.HTTPRoutes {
		hosts, _, _ := unstructured.NestedStringSlice(hr.Object, "spec", "hostnames")
		for _, h := range hosts {
			if slices.Contains(keys, strings.ToLower(h)) {
				return nil, "HTTPRoute " + hr.GetNamespace() + "/" + hr.GetName() + ", whose Gateway's addresses the model does not read for k8s_gateway"
			}
		}
	}
	var out []netip.Addr
	for _, ing := range s.Ingresses {
		match := false
		for _, r := range ing.Spec.Rules {
			if slices.Contains(keys, strings.ToLower(r.Host)) {
				match = true
			}
		}
		if !match {
			continue
		}
		for _, lb := range ing.Status.LoadBalancer.Ingress {
			a, err := netip.ParseAddr(lb.IP)
			if err != nil {
				return nil, fmt.Sprintf("Ingress %s/%s, whose status holds %q, not an IP address", ing.Namespace, ing.Name, lb.Hostname+lb.IP)
			}
			if !slices.Contains(out, a.Unmap()) {
				out = append(out, a.Unmap())
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out, ""
}

// k8sGatewayOption reports whether the entry's block sets option.
func k8sGatewayOption(p *corefile.Plugin, option string) bool {
	return slices.ContainsFunc(p.Block, func(l corefile.Line) bool { return l.Name == option })
}
