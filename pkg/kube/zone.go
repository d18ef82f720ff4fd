package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// ZoneAnswers are what the zone answers to A and AAAA, read once from the parsed Corefile with
// its query model (corefile.Query): LA101 compares them with the Services' externalIPs (A with
// the IPv4 ones, AAAA with the IPv6 ones), the DNS path checks show them as evidence.
type ZoneAnswers struct {
	// Known is false when the address sets cannot be read from the configuration: no readable
	// Corefile, the zone's A queries answered by something else than a template, or answers
	// computed from the name asked (a `match` expression).
	Known bool
	Why   string
	// Object names where they are written: "ConfigMap lan-dns/lan-dns (zone apps.example.com.)".
	Object string
	// Port is the server port asked (the DNS Service's target port when the Corefile serves it).
	Port string
	// Name is the name asked: a label of the zone nobody created, which any zone-wide template
	// answers. A and AAAA are what CoreDNS does with it.
	Name    string
	A, AAAA corefile.Outcome
	// Answers are the A answers of the template entry that answers A in the zone, as written
	// (their Line, Data, Addr and Err: an answer CoreDNS cannot build SERVFAILs every A query);
	// AAAAAnswers those of the entry that answers AAAA.
	Answers, AAAAAnswers []corefile.Answer
	// File is the pod path of the file the A template is written in ("" for the Corefile).
	File string
	// ByName are the names asked when the answers were read name by name (no one template
	// answers the whole zone: see Setup.answersByName); nil otherwise.
	ByName []string
	// By is the plugin that answers the names asked when read name by name (nil otherwise).
	By *corefile.Plugin
}

// Addrs are the IPv4 addresses the zone answers A with (of the valid answers), sorted, each once.
func (z ZoneAnswers) Addrs() []netip.Addr { return answerAddrs(z.Answers, true) }

// Addrs6 are the IPv6 addresses the zone answers AAAA with, sorted, each once.
func (z ZoneAnswers) Addrs6() []netip.Addr { return answerAddrs(z.AAAAAnswers, false) }

func answerAddrs(answers []corefile.Answer, v4 bool) []netip.Addr {
	var out []netip.Addr
	for _, a := range answers {
		if a.Addr.IsValid() && a.Addr.Is4() == v4 && !slices.Contains(out, a.Addr) {
			out = append(out, a.Addr)
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// DeriveModels builds the models the checks read from what discovery read: the zone's
// answers, the proxy's routes and the probe host (host is --host, "" to choose one). Discover
// calls it; tests that build a Setup by hand call it too.
func (s *Setup) DeriveModels(host string) {
	s.parseCorefile()
	s.Model = proxyroute.Build(proxyroute.Objects{
		ProxyService: s.ProxyService, ProxyWorkload: s.ProxyWorkload, ProxyPods: s.ProxyPods,
		Services: s.Services, Ingresses: s.Ingresses, IngressClasses: s.IngressClasses,
		IngressRoutes: s.IngressRoutes, IngressRouteStreams: s.IngressRouteStreams, Middlewares: s.Middlewares, MiddlewaresInstalled: s.middlewaresInstalled(),
		GatewayClasses: s.GatewayClasses, Gateways: s.Gateways, HTTPRoutes: s.HTTPRoutes, ReferenceGrants: s.ReferenceGrants,
		Namespaces: s.Namespaces, Zone: s.Zone,
		AuthorizationPolicies: s.AuthorizationPolicies, AuthorizationPoliciesUnread: s.UnreadReason(IstioAuthorizationPolicies()[0].Key(), IstioAuthorizationPolicies()[1].Key()),
		HTTPProxies: s.HTTPProxies, ProxyConfigMaps: s.ProxyConfigMaps, ProxyConfigMapsUnread: s.proxyConfigMapsUnread(),
	}, host)
	// after the route model: the zone's answers are judged for the names workstations ask
	// (the probe host, the routed hosts)
	s.readZoneAnswers()
	s.deriveReach()
}

// proxyConfigMapsUnread says why the proxy controller's ConfigMap could not be read ("" when it was).
func (s *Setup) proxyConfigMapsUnread() string {
	if s.ProxyService == nil {
		return ""
	}
	if err := s.Unread(ReadKey("", "configmaps", s.ProxyService.Namespace)); err != nil {
		return err.Error()
	}
	return ""
}

// ZonePort is the Corefile port the DNS Service's port 53 reaches: its target port when a
// server block listens there, else the port of the blocks that serve the zone, else the only
// port of the Corefile ("" when none of these is known).
func (s *Setup) ZonePort() string {
	cf := s.Corefile
	if cf == nil {
		return ""
	}
	ports := cf.Ports()
	if s.DNSService != nil {
		spec := kubeobj.PodSpecOf(nil, s.DNSPods)
		if s.DNSWorkload != nil {
			spec = &s.DNSWorkload.Spec.Template.Spec
		}
		for _, sp := range s.DNSService.Spec.Ports {
			if sp.Port != 53 {
				continue
			}
			if t := kubeobj.ResolveTargetPort(sp, spec); t.Port > 0 && slices.Contains(ports, strconv.Itoa(int(t.Port))) {
				return strconv.Itoa(int(t.Port))
			}
		}
	}
	for _, b := range cf.BlocksServing(s.Zone.FQDN(), "") {
		return b.Ports()[0]
	}
	if len(ports) == 1 {
		return ports[0]
	}
	return ""
}

// readZoneAnswers fills Setup.ZoneAnswers from the Corefile's query model.
func (s *Setup) readZoneAnswers() {
	z := ZoneAnswers{Object: "zone " + s.Zone.FQDN()}
	if s.ConfigMap != nil {
		z.Object = kubeobj.ConfigMapRef(s.ConfigMap)
		if !s.Zone.IsZero() {
			z.Object += " (zone " + s.Zone.FQDN() + ")"
		}
	}
	defer func() { s.ZoneAnswers = z }()
	cf := s.Corefile
	if cf == nil || s.Zone.IsZero() {
		z.Why = "no readable Corefile"
		return
	}
	z.Port = s.ZonePort()
	if z.Port == "" {
		z.Why = "the port the zone is served on is not known"
		return
	}
	if s.k8sGatewayAnswers(&z) {
		return
	}
	z.Name = "lanaccess-zone-probe." + s.Zone.FQDN()
	z.A = cf.Query(corefile.Question{Name: z.Name, Type: dns.TypeA, Port: z.Port})
	z.AAAA = cf.Query(corefile.Question{Name: z.Name, Type: dns.TypeAAAA, Port: z.Port})
	var aT, aaaaT *corefile.Template
	for _, b := range cf.ServedOn(z.Port) {
		for i := range b.Templates {
			t := &b.Templates[i]
			if t.File == templateFile(z.A) && t.Line == templateLine(z.A) {
				aT = t
			}
			if t.File == templateFile(z.AAAA) && t.Line == templateLine(z.AAAA) {
				aaaaT = t
			}
		}
	}
	if dynamic := dynamicTemplate(cf, s.Zone.FQDN()); dynamic != nil {
		z.Why = "the zone's answers are computed from the name asked (" + dynamic.Label() + ": match " + strings.Join(dynamic.Match, " ") + ")"
		s.answersByName(cf, &z)
		return
	}
	if aT == nil {
		z.Why = "A queries of the zone are not answered by a template: " + z.A.Describe()
		s.answersByName(cf, &z)
		return
	}
	z.File = aT.File
	if f, ok := cf.Files().Read(aT.File); ok && aT.File != "" {
		z.Object = f.Object + " key " + f.Key + " (zone " + s.Zone.FQDN() + ")"
	}
	z.Answers = typed(aT.Answers, "A")
	if aaaaT != nil && !aaaaT.CatchAll() {
		z.AAAAAnswers = typed(aaaaT.Answers, "AAAA")
	}
	for _, a := range append(append([]corefile.Answer{}, aT.Answers...), z.AAAAAnswers...) {
		if !a.Static {
			z.Why, z.Answers, z.AAAAAnswers = "an answer depends on the query (.Remote, .Meta...)", nil, nil
			if a.Unread != "" {
				z.Why = fmt.Sprintf("the answer at line %d is not read: %s", a.Line, a.Unread)
			}
			return
		}
	}
	z.Known = true
}

// typed keeps the answers of one record type.
func typed(answers []corefile.Answer, t string) []corefile.Answer {
	var out []corefile.Answer
	for _, a := range answers {
		if a.Type == t || !a.Static {
			out = append(out, a)
		}
	}
	return out
}

func templateFile(o corefile.Outcome) string {
	if o.By == nil || o.By.Name != "template" {
		return "\x00"
	}
	return o.By.File
}

func templateLine(o corefile.Outcome) int {
	if o.By == nil || o.By.Name != "template" {
		return -1
	}
	return o.By.Line
}

// dynamicTemplate is a template entry of the zone whose answers depend on the name (match
// expressions): the zone's addresses then cannot be listed.
func dynamicTemplate(cf *corefile.Corefile, zone string) *corefile.Template {
	for i := range cf.Blocks {
		for j := range cf.Blocks[i].Templates {
			t := &cf.Blocks[i].Templates[j]
			if len(t.Match) == 0 || len(t.Answers) == 0 {
				continue
			}
			for _, z := range t.Zones {
				if z != "." && (dns.IsSubDomain(z, zone) || dns.IsSubDomain(zone, z)) {
					return t
				}
			}
		}
	}
	return nil
}

// middlewaresInstalled: one of Traefik's Middleware CRDs is installed, so that the Middlewares
// read are all there are.
func (s *Setup) middlewaresInstalled() bool {
	for _, r := range TraefikMiddlewares() {
		if s.Installed[r.Key()] {
			return true
		}
	}
	return false
}
