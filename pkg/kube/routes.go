package kube

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The proxy's routes, read once: LA107 judges their audience, the probe host is chosen among
// them, and the HTTPS checks name the route they asked.

// ReviewedAnnotation on an IngressRoute or Ingress says its audience was reviewed for the LAN
// (the application has its own login, or is meant to be public).
const ReviewedAnnotation = "lanaccess.io/lan-audience"

// TraefikMiddlewaresAnnotation lists the middlewares of an Ingress's Traefik router
// ("namespace-name@kubernetescrd", comma-separated).
const TraefikMiddlewaresAnnotation = "traefik.ingress.kubernetes.io/router.middlewares"

// TraefikEntryPointsAnnotation lists the entry points of an Ingress's Traefik router.
const TraefikEntryPointsAnnotation = "traefik.ingress.kubernetes.io/router.entrypoints"

// Route is one route of the proxy (an IngressRoute's spec.routes[i], or an Ingress), with what
// protects it.
type Route struct {
	Kind      string // IngressRoute or Ingress
	Namespace string
	Name      string
	Index     int // route index in an IngressRoute
	// Object names the route in findings: "IngressRoute monitoring/grafana route 1".
	Object string
	// Hosts are the names of its Host/HostSNI matchers (or Ingress rules), lower case; none
	// means the route answers any name.
	Hosts []string
	// EntryPoints are the Traefik entry points named by the route (empty: all of them).
	EntryPoints []string
	Middlewares []MiddlewareRef
	// Served is false for an Ingress of another controller's class.
	Served   bool
	Reviewed bool
}

// MiddlewareRef is a middleware named by a route, resolved against the cluster's Middlewares.
type MiddlewareRef struct {
	Raw       string // as written: "auth/sso" or "auth-sso@kubernetescrd"
	Namespace string
	Name      string
	// Found: the Middleware exists. Auth says how it authenticates ("forwardAuth", "chain sso >
	// basicAuth"), "" when it does not.
	Found bool
	Auth  string
}

// Authentication returns how the route authenticates (the first authenticating middleware,
// "forwardAuth (auth/sso)"), or "" when none does.
func (r Route) Authentication() string {
	for _, m := range r.Middlewares {
		if m.Auth != "" {
			return m.Auth + " (" + m.Raw + ")"
		}
	}
	return ""
}

// InZone reports whether some host is in zone (FQDN or not), or the route has no host rule (it
// answers any name, the zone's included).
func (r Route) InZone(zone string) bool {
	zone = strings.TrimSuffix(strings.ToLower(zone), ".")
	if len(r.Hosts) == 0 {
		return true
	}
	for _, h := range r.Hosts {
		h = strings.TrimPrefix(h, "*.")
		if h == "" || zone == "" || h == zone || strings.HasSuffix(h, "."+zone) {
			return true
		}
	}
	return false
}

var (
	traefikHostRule = regexp.MustCompile(`Host(?:SNI)?\(([^)]*)\)`)
	traefikQuoted   = regexp.MustCompile("[`\"]([^`\"]+)[`\"]")
)

// readRouteModel builds the proxy's routes from what discovery read.
func (s *Setup) readRouteModel() {
	idx := newMiddlewareIndex(s)
	s.MiddlewaresKnown = idx.known
	var routes []Route
	for _, ir := range s.IngressRoutes {
		routes = append(routes, ingressRouteRoutes(ir)...)
	}
	for _, ing := range s.Ingresses {
		routes = append(routes, ingressRoute(ing, ingressServedByProxy(s.IngressClasses, ing)))
	}
	for i := range routes {
		for j := range routes[i].Middlewares {
			idx.resolve(&routes[i].Middlewares[j])
		}
	}
	s.Routes = routes
	s.AuthMiddleware = idx.firstAuth()
}

// ingressRouteRoutes reads the routes of an IngressRoute (traefik.io or traefik.containo.us).
func ingressRouteRoutes(ir unstructured.Unstructured) []Route {
	list, _, _ := unstructured.NestedSlice(ir.Object, "spec", "routes")
	eps, _, _ := unstructured.NestedStringSlice(ir.Object, "spec", "entryPoints")
	var out []Route
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		r := Route{
			Kind: "IngressRoute", Namespace: ir.GetNamespace(), Name: ir.GetName(), Index: i,
			Object: Ref("IngressRoute", ir.GetNamespace(), ir.GetName()), EntryPoints: eps, Served: true,
			Reviewed: ir.GetAnnotations()[ReviewedAnnotation] == "reviewed",
		}
		match, _ := m["match"].(string)
		for _, h := range traefikHostRule.FindAllStringSubmatch(match, -1) {
			for _, q := range traefikQuoted.FindAllStringSubmatch(h[1], -1) {
				r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(q[1]), "."))
			}
		}
		mlist, _ := m["middlewares"].([]any)
		for _, x := range mlist {
			mm, ok := x.(map[string]any)
			if !ok {
				continue
			}
			name, _ := mm["name"].(string)
			ns, _ := mm["namespace"].(string)
			if ns == "" {
				ns = ir.GetNamespace()
			}
			r.Middlewares = append(r.Middlewares, MiddlewareRef{Namespace: ns, Name: name, Raw: ns + "/" + name})
		}
		if len(list) > 1 {
			r.Object += fmt.Sprintf(" route %d", i)
		}
		out = append(out, r)
	}
	return out
}

func ingressRoute(ing networkingv1.Ingress, served bool) Route {
	r := Route{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Object: Ref("Ingress", ing.Namespace, ing.Name),
		Served: served, Reviewed: ing.Annotations[ReviewedAnnotation] == "reviewed"}
	for _, rule := range ing.Spec.Rules {
		r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(rule.Host), "."))
	}
	r.EntryPoints = splitList(ing.Annotations[TraefikEntryPointsAnnotation])
	for _, ref := range splitList(ing.Annotations[TraefikMiddlewaresAnnotation]) {
		r.Middlewares = append(r.Middlewares, MiddlewareRef{Raw: ref})
	}
	return r
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ingressServedByProxy: the Ingress's class is handled by Traefik (or it has no class and
// Traefik's class is the default). Without IngressClasses, the class name is the hint.
func ingressServedByProxy(classes []networkingv1.IngressClass, ing networkingv1.Ingress) bool {
	class := ""
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	if class == "" {
		class = ing.Annotations["kubernetes.io/ingress.class"]
	}
	if len(classes) == 0 {
		return class == "" || strings.Contains(class, "traefik")
	}
	for _, c := range classes {
		if !strings.HasPrefix(c.Spec.Controller, "traefik.io/") {
			continue
		}
		if c.Name == class || (class == "" && c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true") {
			return true
		}
	}
	return false
}

// middlewareIndex resolves middleware references and tells which authenticate.
type middlewareIndex struct {
	byKey map[string]unstructured.Unstructured // "namespace/name"
	// known is false when the Middleware CRDs are not installed or unreadable: names are
	// then the only hint.
	known bool
}

func newMiddlewareIndex(s *Setup) middlewareIndex {
	idx := middlewareIndex{byKey: map[string]unstructured.Unstructured{}}
	for _, r := range TraefikMiddlewares() {
		if s.Installed[r.Key()] {
			idx.known = true
		}
	}
	for _, m := range s.Middlewares {
		idx.byKey[m.GetNamespace()+"/"+m.GetName()] = m
	}
	return idx
}

// resolve fills Found and Auth; the Ingress annotation form is "namespace-name@kubernetescrd".
func (idx middlewareIndex) resolve(ref *MiddlewareRef) {
	m, ok := idx.lookup(ref)
	if ok {
		ref.Found = true
		ref.Namespace, ref.Name = m.GetNamespace(), m.GetName()
		ref.Auth = idx.authKind(m, 3)
		return
	}
	if !idx.known && LooksLikeAuth(ref.Raw) {
		ref.Auth = "by its name only, the Middleware CRD could not be read"
	}
}

func (idx middlewareIndex) lookup(ref *MiddlewareRef) (unstructured.Unstructured, bool) {
	if ref.Name != "" {
		m, ok := idx.byKey[ref.Namespace+"/"+ref.Name]
		return m, ok
	}
	raw := strings.TrimSuffix(ref.Raw, "@kubernetescrd")
	for key, m := range idx.byKey {
		if strings.ReplaceAll(key, "/", "-") == raw {
			return m, true
		}
	}
	return unstructured.Unstructured{}, false
}

// authKind says how the middleware authenticates ("" when it does not). Chains are followed
// a few levels deep.
func (idx middlewareIndex) authKind(m unstructured.Unstructured, depth int) string {
	spec, _ := m.Object["spec"].(map[string]any)
	for _, k := range []string{"forwardAuth", "basicAuth", "digestAuth"} {
		if _, ok := spec[k]; ok {
			return k
		}
	}
	if plugin, ok := spec["plugin"].(map[string]any); ok {
		for name := range plugin {
			if LooksLikeAuth(name) {
				return "plugin " + name
			}
		}
	}
	if depth > 0 {
		chain, _, _ := unstructured.NestedSlice(m.Object, "spec", "chain", "middlewares")
		for _, x := range chain {
			c, _ := x.(map[string]any)
			name, _ := c["name"].(string)
			ns, _ := c["namespace"].(string)
			if ns == "" {
				ns = m.GetNamespace()
			}
			if next, ok := idx.byKey[ns+"/"+name]; ok {
				if k := idx.authKind(next, depth-1); k != "" {
					return "chain " + m.GetName() + " > " + k
				}
			}
		}
	}
	return ""
}

// LooksLikeAuth is the name-only hint that a middleware authenticates.
func LooksLikeAuth(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "oidc", "oauth", "sso", "jwt", "login"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// firstAuth is an authenticating middleware of the cluster ("namespace/name"), to suggest in
// remediations; "" when there is none.
func (idx middlewareIndex) firstAuth() string {
	keys := make([]string, 0, len(idx.byKey))
	for k := range idx.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if idx.authKind(idx.byKey[k], 3) != "" {
			return k
		}
	}
	return ""
}

// ProbeHost is the name the DNS and HTTPS probes ask for, and where it came from.
type ProbeHost struct {
	Name   string
	Source string
}

// chooseProbeHost takes host (--host); else a host of a route the proxy serves inside the zone,
// preferring a route with an authenticating middleware (the forward-auth that answers 302),
// then the first name in order; else the zone apex.
func chooseProbeHost(host, zone string, routes []Route) ProbeHost {
	if h := strings.TrimSuffix(strings.TrimSpace(host), "."); h != "" {
		return ProbeHost{Name: strings.ToLower(h), Source: "--host"}
	}
	zone = strings.ToLower(strings.TrimSuffix(zone, "."))
	if zone == "" {
		return ProbeHost{}
	}
	type candidate struct {
		host, source string
		auth         bool
	}
	var found []candidate
	for _, r := range routes {
		if !r.Served {
			continue
		}
		auth := r.Authentication() != ""
		for _, h := range r.Hosts {
			if strings.Contains(h, "*") || (h != zone && !strings.HasSuffix(h, "."+zone)) {
				continue
			}
			found = append(found, candidate{host: h, source: r.Object, auth: auth})
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].auth != found[j].auth {
			return found[i].auth
		}
		return found[i].host < found[j].host
	})
	if len(found) > 0 {
		c := found[0]
		src := c.source
		if c.auth {
			src += " (a route with an authentication middleware)"
		}
		return ProbeHost{Name: c.host, Source: src}
	}
	return ProbeHost{Name: zone, Source: "zone apex (no route of the proxy for the zone was found; name one with --host)"}
}
