package proxyroute

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// Traefik's TCP and UDP routers (IngressRouteTCP, IngressRouteUDP), modelled as Traefik
// v3.7.9 builds them. A TCP router takes whole connections of its entry points before any HTTP
// router: no HTTP middleware (forwardAuth, basicAuth) can apply, so on an entry point the LAN
// reaches its backend is open to the whole LAN. How the routers bind entry points:
//   - an IngressRouteTCP's spec.entryPoints, else the default entry points (the aggregator gives
//     a TCP router without entry points getDefaultsEntrypoints': pkg/server/aggregator.go
//     mergeConfiguration), only TCP entry points (pkg/config/runtime/runtime_tcp.go
//     GetTCPRoutersByEntryPoints: "entryPoint %q doesn't exist" for the others);
//   - an IngressRouteUDP's spec.entryPoints, else every UDP entry point
//     (pkg/config/runtime/runtime_udp.go GetUDPRoutersByEntryPoints, called with the UDP entry
//     points by pkg/server/routerfactory.go);
//   - a route of another class is skipped, a TCP route with an empty match too, and a route
//     whose middleware or service is in another namespace when allowCrossNamespace is off
//     (pkg/provider/kubernetes/crd/kubernetes_tcp.go loadIngressRouteTCPConfiguration,
//     makeMiddlewareTCPKeys, createLoadBalancerServerTCP; kubernetes_udp.go).
// HostSNI(`*`) matches every connection, TLS or not (pkg/muxer/tcp/matcher.go hostSNI).

// StreamRoute is one TCP or UDP router of the proxy: an IngressRouteTCP's or IngressRouteUDP's
// spec.routes[i].
type StreamRoute struct {
	Kind      string // IngressRouteTCP or IngressRouteUDP
	Namespace string
	Name      string
	Index     int
	// Object names it in findings: "IngressRouteTCP db/postgres".
	Object   string
	Protocol corev1.Protocol
	// Match is a TCP route's rule as written; SNI its HostSNI names ("*": every connection).
	Match string
	SNI   []string
	// TLS is how the router treats TLS: "" (none: plain TCP), "passthrough" (the backend's own
	// TLS), "terminated" (Traefik's certificate, then plain TCP to the backend).
	TLS string
	// Middlewares are the TCP middlewares it names (ipAllowList, inFlightConn), as written.
	Middlewares []string
	Backends    []Backend
	EntryPoints []string
	Via         []EntryPoint
	Reach       Reach
	ReachWhy    string
	// Served is false when Traefik does not build the router; NotServed says why.
	Served    bool
	NotServed string
	Reviewed  bool
}

// Hosts describes what the route matches.
func (r StreamRoute) Hosts() string {
	switch {
	case r.Protocol == corev1.ProtocolUDP:
		return "every UDP datagram of its entry points"
	case len(r.SNI) == 0:
		return "connections matching " + r.Match
	case slices.Contains(r.SNI, "*"):
		return "every TCP connection of its entry points (HostSNI(`*`))"
	}
	return "TLS connections for " + strings.Join(r.SNI, ", ")
}

// streamRoutes models the IngressRouteTCPs and IngressRouteUDPs.
func (s *builder) streamRoutes() []StreamRoute {
	var out []StreamRoute
	for _, ir := range s.IngressRouteStreams {
		list, _, _ := unstructured.NestedSlice(ir.Object, "spec", "routes")
		eps, _, _ := unstructured.NestedStringSlice(ir.Object, "spec", "entryPoints")
		proto := corev1.ProtocolTCP
		if ir.GetKind() == "IngressRouteUDP" {
			proto = corev1.ProtocolUDP
		}
		notServed := s.crdClassRefused(ir)
		if !s.traefikReasoning() {
			notServed = "the proxy on the node addresses is " + s.Implementation.String() + ", not Traefik: it does not read " + ir.GetKind() + "s"
		}
		tlsMode := ""
		if tls, ok, _ := unstructured.NestedMap(ir.Object, "spec", "tls"); ok && tls != nil && proto == corev1.ProtocolTCP {
			tlsMode = "terminated"
			if p, _ := tls["passthrough"].(bool); p {
				tlsMode = "passthrough"
			}
		}
		for i, raw := range list {
			m, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			r := StreamRoute{Kind: ir.GetKind(), Namespace: ir.GetNamespace(), Name: ir.GetName(), Index: i,
				Object: kubeobj.Ref(ir.GetKind(), ir.GetNamespace(), ir.GetName()), Protocol: proto, TLS: tlsMode,
				EntryPoints: eps, NotServed: notServed, Reviewed: ir.GetAnnotations()[ReviewedAnnotation] == "reviewed"}
			if len(list) > 1 {
				r.Object += fmt.Sprintf(" route %d", i)
			}
			s.readStreamRoute(&r, m)
			out = append(out, r)
		}
	}
	return out
}

// readStreamRoute reads one route's match, backends and middlewares, whether Traefik builds it,
// and how the LAN reaches it.
func (s *builder) readStreamRoute(r *StreamRoute, m map[string]any) {
	r.Match, _ = m["match"].(string)
	for _, h := range traefikHostRule.FindAllStringSubmatch(r.Match, -1) {
		for _, q := range traefikQuoted.FindAllStringSubmatch(h[1], -1) {
			r.SNI = append(r.SNI, strings.TrimSuffix(strings.ToLower(q[1]), "."))
		}
	}
	r.Backends = ingressRouteBackends(m, r.Namespace)
	mws := ingressRouteMiddlewares(m, r.Namespace)
	for _, mw := range mws {
		r.Middlewares = append(r.Middlewares, mw.Raw)
	}
	if r.NotServed == "" {
		r.NotServed = s.streamRefused(*r, mws)
	}
	r.Served = r.NotServed == ""
	via, known := s.streamEntryPoints(r.EntryPoints, r.Protocol)
	s.reachStream(r, via, known)
}

// streamRefused says why Traefik does not build the router ("" when it does): an empty TCP
// match, or a reference to another namespace with allowCrossNamespace off.
func (s *builder) streamRefused(r StreamRoute, mws []MiddlewareRef) string {
	if r.Protocol == corev1.ProtocolTCP && r.Match == "" {
		return "its match is empty: Traefik skips it (\"Empty match rule\")"
	}
	if s.Traefik.AllowCrossNamespaceKnown && s.Traefik.AllowCrossNamespace {
		return ""
	}
	why := crossNamespaceReference(&Route{Namespace: r.Namespace, Middlewares: mws, Backends: r.Backends})
	if why == "" || !s.Traefik.Found || !s.Traefik.AllowCrossNamespaceKnown {
		return ""
	}
	return why + ", and providers.kubernetesCRD.allowCrossNamespace is off (" + s.Traefik.Source + ")"
}

// streamEntryPoints resolves a TCP or UDP router's entry points (see the package comment).
func (s *builder) streamEntryPoints(names []string, proto corev1.Protocol) ([]EntryPoint, bool) {
	cfg := s.Traefik
	if !cfg.EntryPointsKnown {
		return nil, false
	}
	var out []EntryPoint
	if len(names) == 0 {
		if proto == corev1.ProtocolTCP {
			return cfg.DefaultEntryPoints(), len(cfg.Unsure) == 0
		}
		for _, e := range cfg.EntryPoints {
			if e.Protocol == corev1.ProtocolUDP {
				out = append(out, e)
			}
		}
		return out, len(cfg.Unsure) == 0
	}
	all := true
	for _, n := range names {
		if e, ok := cfg.EntryPoint(n); ok && e.Protocol == proto {
			out = append(out, e)
		} else {
			all = false
		}
	}
	return out, all || len(cfg.Unsure) == 0
}

// reachStream fills the router's entry points and whether the LAN reaches them.
func (s *builder) reachStream(r *StreamRoute, eps []EntryPoint, known bool) {
	hr := Route{EntryPoints: r.EntryPoints}
	s.reach(&hr, eps, known)
	r.Via, r.Reach, r.ReachWhy = hr.Via, hr.Reach, hr.ReachWhy
}

// EntryPointUsers names the served routers on entry point name the LAN reaches (HTTP routes
// and TCP/UDP routers): what a Service port targeting it opens to the LAN.
func (m Model) EntryPointUsers(name string) []string {
	var out []string
	on := func(via []EntryPoint) bool {
		return slices.ContainsFunc(via, func(e EntryPoint) bool { return strings.EqualFold(e.Name, name) })
	}
	for _, r := range m.Routes {
		if r.Served && on(r.Via) && !slices.Contains(out, r.Object) {
			out = append(out, r.Object)
		}
	}
	for _, r := range m.StreamRoutes {
		if r.Served && on(r.Via) && !slices.Contains(out, r.Object) {
			out = append(out, r.Object)
		}
	}
	return out
}

// StreamUsers names the served TCP/UDP routers on entry point name.
func (m Model) StreamUsers(name string) []string {
	var out []string
	for _, r := range m.StreamRoutes {
		if r.Served && slices.ContainsFunc(r.Via, func(e EntryPoint) bool { return strings.EqualFold(e.Name, name) }) &&
			!slices.Contains(out, r.Object) {
			out = append(out, r.Object)
		}
	}
	return out
}
