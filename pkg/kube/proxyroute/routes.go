package proxyroute

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// The proxy's routes, read once: LA107 judges their audience, the probe host is chosen among
// them, and the HTTPS checks name the route they asked. A route is modelled with Traefik's own
// semantics: whether Traefik serves it at all (an Ingress of another controller's class, a
// reference Traefik refuses), and through which entry points, which the LAN reaches only when a
// Service port on the node addresses targets them.

// ReviewedAnnotation on an IngressRoute or Ingress says its audience was reviewed for the LAN
// (the application has its own login, or is meant to be public).
const ReviewedAnnotation = "lanaccess.io/lan-audience"

// TraefikMiddlewaresAnnotation lists the middlewares of an Ingress's Traefik router
// ("namespace-name@kubernetescrd", comma-separated).
const TraefikMiddlewaresAnnotation = "traefik.ingress.kubernetes.io/router.middlewares"

// TraefikRouterTLSAnnotation makes an Ingress's Traefik router terminate TLS.
const TraefikRouterTLSAnnotation = "traefik.ingress.kubernetes.io/router.tls"

// TraefikPriorityAnnotation is an Ingress's Traefik router priority.
const TraefikPriorityAnnotation = "traefik.ingress.kubernetes.io/router.priority"

// TraefikEntryPointsAnnotation lists the entry points of an Ingress's Traefik router.
const TraefikEntryPointsAnnotation = "traefik.ingress.kubernetes.io/router.entrypoints"

// Reach says whether the LAN reaches a route.
type Reach string

// The reaches of a route.
const (
	// ReachLAN: one of its entry points is reached on the node addresses.
	ReachLAN Reach = "lan"
	// ReachNotLAN: none of its entry points is.
	ReachNotLAN Reach = "not-lan"
	// ReachUnknown: the proxy's entry points could not be read.
	ReachUnknown Reach = "unknown"
)

// Route is one route of the proxy (an IngressRoute's spec.routes[i], an Ingress, an
// HTTPRoute's rule), with what protects it and how the LAN reaches it.
type Route struct {
	Kind      string // IngressRoute, Ingress or HTTPRoute
	Namespace string
	Name      string
	Index     int // route index in an IngressRoute, rule index in an HTTPRoute
	// Object names the route in findings: "IngressRoute monitoring/grafana route 1".
	Object string
	// Hosts are the names of its Host/HostSNI matchers (Ingress rules, HTTPRoute hostnames),
	// lower case; none means the route answers any name.
	Hosts []string
	// EntryPoints are the Traefik entry points named by the route (empty: the defaults).
	EntryPoints []string
	// TLS: the router itself terminates TLS (an IngressRoute's spec.tls, an Ingress's
	// router.tls annotation), whatever its entry points say.
	TLS bool
	// Via are the entry points Traefik serves it on, with how the LAN reaches each; Listeners
	// are the Gateway listeners an HTTPRoute is served through ("Gateway traefik/gw listener
	// websecure (:8443/HTTPS) on entry point websecure").
	Via       []EntryPoint
	Listeners []string
	// Reach says whether the LAN reaches it; ReachWhy explains a Reach other than ReachLAN.
	Reach    Reach
	ReachWhy string
	// Middlewares are the middlewares it names, resolved.
	Middlewares []MiddlewareRef
	// Served is false when the proxy does not serve it: NotServed says why (another
	// controller's class, a reference Traefik refuses). Refused: Traefik reads the route but
	// refuses it (a reference it does not allow), so its host answers 404. ServedUnsure says why
	// it may be refused when that cannot be told (an option of Traefik that could not be read).
	Served       bool
	NotServed    string
	Refused      bool
	ServedUnsure string
	// RefusedStatus is what Traefik answers for the host of a refused route: 0 for 404 (no
	// router), 500 for an HTTPRoute rule whose router Traefik keeps with an error service.
	// MissingGrants are the backends of such a rule that a ReferenceGrant would let it name.
	RefusedStatus int
	MissingGrants []Backend
	Reviewed      bool
	// RuleFilters is the number of filters of an HTTPRoute's rule (a fix appends to them).
	RuleFilters int
	// Redirects says how the model knows the route answers every request with a redirect ("":
	// it does not know; see RedirectOnly).
	Redirects string
	// Priority is the router's priority as written (an IngressRoute route's priority, an
	// Ingress's router.priority annotation), 0 when Traefik computes it; RuleLength is the
	// length of the rule Traefik then uses (an IngressRoute's match), 0 when not known.
	Priority   int
	RuleLength int
	// Backends are where it sends requests: an IngressRoute's services, an Ingress's backend
	// Services, an HTTPRoute rule's backendRefs.
	Backends []Backend
	// CatchAll: ingress-nginx serves it for every Host no other Ingress names (an Ingress with
	// only a defaultBackend). AuthUnsure says why whether it authenticates cannot be told ("":
	// it can). Unjudged says why its audience is not judged: it is served by an implementation
	// whose authentication the model does not read ("" for Traefik and ingress-nginx).
	CatchAll   bool
	AuthUnsure string
	Unjudged   string
	// AuthPortal names the authentication server the route serves (the Service a forwardAuth of
	// the proxy's routes asks: authportal.go), "" when it serves none.
	AuthPortal string
}

// Backend is one backend of a route.
type Backend struct {
	// Kind is Service or TraefikService (an IngressRoute's services[].kind, default Service);
	// Group is an HTTPRoute backendRef's group as Traefik names it ("core" for Services).
	Kind      string
	Group     string
	Namespace string
	Name      string
}

// IsService reports whether the backend is Service namespace/name.
func (b Backend) IsService(namespace, name string) bool {
	return b.Kind == "Service" && b.Namespace == namespace && b.Name == name
}

// MiddlewareRef is a middleware named by a route, resolved against the cluster's Middlewares.
type MiddlewareRef struct {
	Raw       string // as written: "auth/sso", "auth-sso@kubernetescrd", "ExtensionRef web/sso"
	Namespace string
	Name      string
	// Found: the Middleware exists. Auth says how it authenticates ("forwardAuth", "chain sso >
	// basicAuth"), "" when it does not.
	Found bool
	Auth  string
	// ForwardAuth is the address of its forwardAuth (its own, or a chained middleware's): where
	// Traefik asks whether a request may pass, and whose answer (a 302 to the identity
	// provider) the client gets. "" when it has none.
	ForwardAuth string
	// Forward is that forwardAuth with the options that shape the client's answer (nil when
	// it has none).
	Forward *ForwardAuth
	// RedirectScheme is the target scheme of its redirectScheme, "" when it is no redirectScheme.
	RedirectScheme string
}

// ForwardAuth is a forwardAuth middleware as Traefik runs it (traefik/traefik v3.7.9
// pkg/middlewares/auth/forward.go): when the auth server answers outside 2xx, Traefik copies its
// status and headers to the client, and the Location as Go's http.Response.Location resolves it
// against Address, unless PreserveLocationHeader (redirectURL); when it answers 401 and
// AuthSigninURL is set, Traefik redirects to AuthSigninURL instead (ServeHTTP).
type ForwardAuth struct {
	// Middleware is the Middleware that holds it ("namespace/name"; a chain's member).
	Middleware string
	Address    string
	// PreserveLocationHeader (Traefik v3.3+) passes the auth server's Location as written.
	PreserveLocationHeader bool
	// AuthSigninURL (Traefik v3.7+) is where a 401 of the auth server sends the client.
	AuthSigninURL string
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

// RedirectOnly says how the route answers every request the LAN can send it with a redirect,
// or with nothing, before any service ("redirectScheme to https (web/to-https)"); "" when it
// may reach a service. Three ways, each as Traefik v3.7.9 runs it:
//   - Redirects, set by the model (an HTTPRoute rule with a RequestRedirect filter);
//   - every entry point the LAN reaches it on redirects, the route names hosts, and the
//     redirection's router outranks it (redirectedByEntryPoints);
//   - its first middleware is a redirectScheme to https and neither the router nor any entry
//     point it is served on terminates TLS. Traefik's redirectScheme redirects unless the request
//     already has the target scheme, and a request without TLS is http: X-Forwarded-Proto from
//     an untrusted client is replaced by Traefik (pkg/middlewares/redirect/redirect_scheme.go
//     clientRequestURL, redirect.go ServeHTTP).
func (r Route) RedirectOnly() string {
	if r.Redirects != "" {
		return r.Redirects
	}
	if how := r.redirectedByEntryPoints(); how != "" {
		return how
	}
	if len(r.Middlewares) == 0 || r.TLS || len(r.Via) == 0 {
		return ""
	}
	first := r.Middlewares[0]
	if !first.Found || !strings.EqualFold(first.RedirectScheme, "https") {
		return ""
	}
	for _, e := range r.Via {
		if e.HTTPTLS {
			return ""
		}
	}
	return "its redirectScheme to https (" + first.Raw + ")"
}

// maxUserPriority is the highest priority Traefik builds a router of a provider with: above
// it, "the router priority ... exceeds the max user-defined priority" and the router is not
// built (traefik/traefik v3.7.9 pkg/server/router/router.go, maxUserPriority = MaxInt - 1000).
// The internal routers (an entry point's redirection, MaxInt - 1) are above every user router.
const maxUserPriority = math.MaxInt - 1000

// refuseOverPriority marks a route whose priority Traefik refuses (proven on the lab's Traefik:
// lab/e2e traefik_routes_test.go).
func refuseOverPriority(r *Route) {
	if r.Priority > maxUserPriority {
		r.Served, r.Refused = false, true
		r.NotServed = fmt.Sprintf("its priority %d exceeds Traefik's maximum for user routers (%d)", r.Priority, maxUserPriority)
	}
}

// maxRulePriority bounds the priority Traefik computes for a router without one (the length of
// its rule): no object the API server stores holds a longer rule.
const maxRulePriority = 1 << 21

// redirectedByEntryPoints: every entry point the LAN reaches the route on has Traefik's
// redirection router (HostRegexp(`^.+$`), so every request with a Host), whose priority is
// above the route's, and the route only answers some hosts (a request without Host misses the
// redirection and reaches a router without a Host rule). With allowACMEByPass the
// redirection leaves the ACME challenge path out: not judged as redirect-only.
func (r Route) redirectedByEntryPoints() string {
	if len(r.Hosts) == 0 {
		return ""
	}
	priority := r.Priority
	if priority == 0 {
		priority = maxRulePriority
		if r.RuleLength > 0 {
			priority = r.RuleLength
		}
	}
	var names []string
	for _, e := range r.Via {
		if !e.Exposed() {
			continue
		}
		if e.RedirectTo == "" || e.ACMEBypass || e.RedirectPriority <= priority {
			return ""
		}
		names = append(names, e.Name)
	}
	if len(names) == 0 {
		return ""
	}
	return "the redirection of entry point " + strings.Join(names, ", ") + " (--entryPoints." + names[0] + ".http.redirections.entryPoint.to), whose router outranks this one"
}

// ServesNothing: every service of the route is Traefik's noop@internal, which answers 418 with
// no body (traefik/traefik v3.7.9 pkg/server/service/internalhandler.go InternalHandlers.get):
// whatever its middlewares let through, nothing is served.
func (r Route) ServesNothing() bool {
	for _, b := range r.Backends {
		if b.Kind != "TraefikService" || b.Name != "noop@internal" {
			return false
		}
	}
	return len(r.Backends) > 0
}

// ForwardAuthAddress is the forwardAuth address of the route's first authenticating
// middleware, "" when it authenticates otherwise or not at all.
func (r Route) ForwardAuthAddress() string {
	if fa := r.ForwardAuth(); fa != nil {
		return fa.Address
	}
	return ""
}

// ForwardAuth is the forwardAuth of the route's first authenticating middleware, nil when it
// authenticates otherwise or not at all.
func (r Route) ForwardAuth() *ForwardAuth {
	for _, m := range r.Middlewares {
		if m.Auth != "" {
			return m.Forward
		}
	}
	return nil
}

// HTTPS reports whether the LAN reaches the route on port 443/TCP of a Service.
func (r Route) HTTPS() bool {
	for _, e := range r.Via {
		for _, l := range e.LAN {
			if strings.HasPrefix(l, "443/TCP ") {
				return true
			}
		}
	}
	return false
}

// InZone reports whether some host is in z, or the route has no host rule (it answers any name,
// the zone's included). Every route is in the zero zone (unknown).
func (r Route) InZone(z zone.Zone) bool {
	if len(r.Hosts) == 0 {
		return true
	}
	for _, h := range r.Hosts {
		h = strings.TrimPrefix(h, "*.")
		if h == "" || z.IsZero() || z.Contains(h) {
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
func (s *builder) readRouteModel() {
	if s.ProxyService != nil {
		s.Implementation = s.identify()
		s.Traefik = s.readTraefikConfig()
		if s.Implementation.Name == ImplIngressNginx {
			s.Nginx = s.readNginxConfig()
		}
	}
	idx := newMiddlewareIndex(s)
	s.MiddlewaresKnown = idx.known
	routes := make([]Route, 0, len(s.IngressRoutes)+len(s.Ingresses)+len(s.HTTPRoutes))
	for _, ir := range s.IngressRoutes {
		routes = append(routes, s.ingressRouteRoutes(ir)...)
	}
	for _, ing := range s.Ingresses {
		switch {
		case s.Implementation.Name == ImplIngressNginx:
			routes = append(routes, s.nginxIngressRoute(ing))
		case s.traefikReasoning():
			routes = append(routes, s.ingressRoute(ing))
		default:
			routes = append(routes, s.unjudgedIngressRoute(ing))
		}
	}
	if s.traefikReasoning() {
		routes = append(routes, s.httpRoutes()...)
	} else {
		routes = append(routes, s.unjudgedHTTPRoutes()...)
	}
	if s.Implementation.Name == ImplContour {
		routes = append(routes, s.contourHTTPProxies()...)
	}
	for i := range routes {
		for j := range routes[i].Middlewares {
			idx.resolve(&routes[i].Middlewares[j])
		}
		idx.entryPointAuth(&routes[i])
	}
	if s.Implementation.Name == ImplIstio {
		s.istioAuthorization(routes)
	}
	s.markAuthPortals(routes)
	s.Routes = routes
	s.StreamRoutes = s.streamRoutes()
	s.AuthMiddleware = idx.firstAuth()
}

// ingressRouteRoutes reads the routes of an IngressRoute (traefik.io or traefik.containo.us).
func (s *builder) ingressRouteRoutes(ir unstructured.Unstructured) []Route {
	list, _, _ := unstructured.NestedSlice(ir.Object, "spec", "routes")
	eps, _, _ := unstructured.NestedStringSlice(ir.Object, "spec", "entryPoints")
	notServed := s.crdClassRefused(ir)
	tls, hasTLS, _ := unstructured.NestedFieldNoCopy(ir.Object, "spec", "tls")
	hasTLS = hasTLS && tls != nil
	if !s.traefikReasoning() {
		notServed = "the proxy on the node addresses is " + s.Implementation.String() + ", not Traefik: it does not read IngressRoutes"
	}
	var out []Route
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		r := Route{
			Kind: "IngressRoute", Namespace: ir.GetNamespace(), Name: ir.GetName(), Index: i,
			Object: kubeobj.Ref("IngressRoute", ir.GetNamespace(), ir.GetName()), EntryPoints: eps, Served: true, TLS: hasTLS,
			Reviewed: ir.GetAnnotations()[ReviewedAnnotation] == "reviewed",
		}
		match, _ := m["match"].(string)
		r.RuleLength = len(match)
		if p, ok := m["priority"].(int64); ok && p > 0 {
			r.Priority = int(min(p, math.MaxInt))
		}
		for _, h := range traefikHostRule.FindAllStringSubmatch(match, -1) {
			for _, q := range traefikQuoted.FindAllStringSubmatch(h[1], -1) {
				r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(q[1]), "."))
			}
		}
		r.Middlewares = ingressRouteMiddlewares(m, ir.GetNamespace())
		r.Backends = ingressRouteBackends(m, ir.GetNamespace())
		if len(list) > 1 {
			r.Object += fmt.Sprintf(" route %d", i)
		}
		if notServed != "" {
			r.Served, r.NotServed = false, notServed
		} else {
			s.judgeReferences(&r)
		}
		if r.Served {
			refuseOverPriority(&r)
		}
		via, known := s.entryPointsOf(eps)
		s.reach(&r, via, known)
		out = append(out, r)
	}
	return out
}

// ingressRouteMiddlewares reads a route's middlewares: a name without a provider is a
// Middleware of the IngressRoute's namespace unless written.
func ingressRouteMiddlewares(route map[string]any, namespace string) []MiddlewareRef {
	var out []MiddlewareRef
	mlist, _ := route["middlewares"].([]any)
	for _, x := range mlist {
		mm, ok := x.(map[string]any)
		if !ok {
			continue
		}
		name, _ := mm["name"].(string)
		ns, _ := mm["namespace"].(string)
		ref := MiddlewareRef{Namespace: ns, Name: name, Raw: name}
		if !strings.Contains(name, "@") {
			if ref.Namespace == "" {
				ref.Namespace = namespace
			}
			ref.Raw = ref.Namespace + "/" + name
		}
		out = append(out, ref)
	}
	return out
}

// ingressRouteBackends reads a route's services: kind Service unless written, namespace the
// IngressRoute's unless written (traefik/traefik v3.7.9 pkg/provider/kubernetes/crd
// kubernetes_http.go nameAndService, namespaceOrParentNamespace). A name of another provider
// ("name@file") keeps its name and no namespace.
func ingressRouteBackends(route map[string]any, namespace string) []Backend {
	list, _ := route["services"].([]any)
	var out []Backend
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		b := Backend{Kind: "Service", Namespace: namespace}
		b.Name, _ = m["name"].(string)
		if k, _ := m["kind"].(string); k != "" {
			b.Kind = k
		}
		if ns, _ := m["namespace"].(string); ns != "" {
			b.Namespace = ns
		}
		if strings.Contains(b.Name, "@") {
			b.Namespace = ""
		}
		if b.Name != "" {
			out = append(out, b)
		}
	}
	return out
}

// crdClassRefused says why Traefik's CRD provider skips an IngressRoute of another class
// (traefik/traefik pkg/provider/kubernetes/crd/kubernetes.go shouldProcessIngress: the
// provider's ingressClass, else only routes without a class or of class "traefik").
func (s *builder) crdClassRefused(ir unstructured.Unstructured) string {
	class, _, _ := unstructured.NestedString(ir.Object, "spec", "ingressClassName")
	if class == "" {
		class = ir.GetAnnotations()["kubernetes.io/ingress.class"]
	}
	want := s.Traefik.CRDIngressClass
	if !s.Traefik.Found || class == want || (want == "" && class == "traefik") {
		return ""
	}
	return fmt.Sprintf("its class %q is not the one the proxy's CRD provider serves (%q): Traefik skips it", class, want)
}

// judgeReferences marks a route Traefik refuses because of a reference: with
// allowCrossNamespace off (Traefik's default), a middleware or a service in another namespace,
// or an @kubernetescrd middleware name, makes Traefik skip the whole route, which then answers
// 404 (traefik/traefik v3.7.9 pkg/provider/kubernetes/crd/kubernetes_http.go
// loadIngressRouteConfiguration: makeMiddlewareKeys or nameAndService error -> continue;
// kubernetes.go resolveReference, "allowCrossNamespace is disabled, cross-namespace are
// disallowed"; nameAndService, "service %s/%s not in the parent resource namespace %s").
func (s *builder) judgeReferences(r *Route) {
	cfg := s.Traefik
	if cfg.AllowCrossNamespaceKnown && cfg.AllowCrossNamespace {
		return
	}
	why := crossNamespaceReference(r)
	if why == "" {
		return
	}
	if !cfg.Found || !cfg.AllowCrossNamespaceKnown {
		r.ServedUnsure = why + ": Traefik refuses it unless providers.kubernetesCRD.allowCrossNamespace is on, and that option could not be read (" + s.traefikUnread() + ")"
		return
	}
	r.Served, r.Refused = false, true
	r.NotServed = why + ", and providers.kubernetesCRD.allowCrossNamespace is off (" + cfg.Source + ")"
}

// crossNamespaceReference names the first reference of an IngressRoute's route that Traefik
// allows only with allowCrossNamespace, "" when there is none.
func crossNamespaceReference(r *Route) string {
	for _, m := range r.Middlewares {
		switch {
		case strings.HasSuffix(m.Name, "@kubernetescrd"):
			return fmt.Sprintf("middleware %s is an @kubernetescrd reference", m.Raw)
		case strings.Contains(m.Name, "@"):
			continue // another provider's middleware: not a namespace question
		case m.Namespace != r.Namespace:
			return fmt.Sprintf("middleware %s is in namespace %s, not the route's", m.Raw, m.Namespace)
		}
	}
	for _, b := range r.Backends {
		if b.Namespace != "" && b.Namespace != r.Namespace {
			return fmt.Sprintf("its %s %s/%s is in namespace %s, not the route's", b.Kind, b.Namespace, b.Name, b.Namespace)
		}
	}
	return ""
}

// traefikUnread says why the Traefik configuration is not fully known.
func (s *builder) traefikUnread() string {
	if !s.Traefik.Found {
		return s.Traefik.EntryPointsWhy
	}
	return strings.Join(s.Traefik.Unsure, ", ") + " may set it"
}

// entryPointsOf resolves the entry points a router names (none: Traefik's defaults). known is
// false when the proxy's entry points are not known.
func (s *builder) entryPointsOf(names []string) ([]EntryPoint, bool) {
	cfg := s.Traefik
	if !cfg.EntryPointsKnown {
		return nil, false
	}
	if len(names) == 0 {
		return cfg.DefaultEntryPoints(), len(cfg.Unsure) == 0
	}
	var out []EntryPoint
	all := true
	for _, n := range names {
		if e, ok := cfg.EntryPoint(n); ok {
			out = append(out, e)
		} else {
			all = false // not defined by the arguments: Traefik ignores it, unless a file defines it
		}
	}
	return out, all || len(cfg.Unsure) == 0
}

// reach fills the route's entry points and whether the LAN reaches them.
func (s *builder) reach(r *Route, eps []EntryPoint, known bool) {
	r.Via = eps
	for _, e := range eps {
		if e.Exposed() {
			r.Reach = ReachLAN
			return
		}
	}
	if !known {
		r.Reach = ReachUnknown
		why := "the proxy's entry points are not known: " + s.Traefik.EntryPointsWhy
		if s.Traefik.EntryPointsKnown {
			why = "an entry point it names is not among the proxy's arguments, and " + strings.Join(s.Traefik.Unsure, ", ") + " may define it"
		}
		r.ReachWhy = why
		return
	}
	r.Reach = ReachNotLAN
	if len(eps) == 0 {
		r.ReachWhy = fmt.Sprintf("it names entry points %s, which the proxy does not define", strings.Join(r.EntryPoints, ", "))
		return
	}
	var labels []string
	for _, e := range eps {
		labels = append(labels, e.Label())
	}
	r.ReachWhy = fmt.Sprintf("it is served on entry point %s, which no port of the proxy's Services on the LAN addresses reaches", strings.Join(labels, ", "))
}

func (s *builder) ingressRoute(ing networkingv1.Ingress) Route {
	r := Route{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Object: kubeobj.Ref("Ingress", ing.Namespace, ing.Name),
		Served: true, Reviewed: ing.Annotations[ReviewedAnnotation] == "reviewed", TLS: ing.Annotations[TraefikRouterTLSAnnotation] == "true"}
	if why := ingressNotServed(s.IngressClasses, ing); why != "" {
		r.Served, r.NotServed = false, why
	}
	if cp := s.Traefik.CrossProviderNamespaces; r.Served && cp != nil && ing.Annotations[TraefikMiddlewaresAnnotation] != "" && !slices.Contains(cp, ing.Namespace) {
		// traefik/traefik v3.7.9 pkg/provider/kubernetes/ingress/kubernetes.go: "Skipping
		// Ingress: cross-provider middleware reference is not allowed from namespace".
		r.Served, r.Refused = false, true
		r.NotServed = fmt.Sprintf("it names middlewares, and namespace %s is not in the ingress provider's crossProviderNamespaces (%s)", ing.Namespace, strings.Join(cp, ","))
	}
	for _, rule := range ing.Spec.Rules {
		r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(rule.Host), "."))
	}
	r.Backends = ingressBackends(ing)
	r.RuleLength = ingressRuleLength(ing)
	if p, err := strconv.Atoi(ing.Annotations[TraefikPriorityAnnotation]); err == nil && p > 0 {
		r.Priority = p
		if r.Served {
			refuseOverPriority(&r)
		}
	}
	r.EntryPoints = splitList(ing.Annotations[TraefikEntryPointsAnnotation])
	for _, ref := range splitList(ing.Annotations[TraefikMiddlewaresAnnotation]) {
		r.Middlewares = append(r.Middlewares, MiddlewareRef{Raw: ref})
	}
	via, known := s.entryPointsOf(r.EntryPoints)
	s.reach(&r, via, known)
	return r
}

// ingressRuleLength bounds from above the length of the rules Traefik's Ingress provider
// writes for an Ingress, one router per path: `Host("h") && PathPrefix("/p")`, with the longer
// forms where a setting may choose them (v2 syntax's HostRegexp for a wildcard host, strict
// prefix matching's `(Path("/p") || PathPrefix("/p/"))`); a router without a priority gets its
// rule's length (traefik/traefik v3.7.9 pkg/provider/kubernetes/ingress/kubernetes.go
// loadRouter, buildHostRuleV2, buildStrictPrefixMatchingRule).
func ingressRuleLength(ing networkingv1.Ingress) int {
	longest := len(`PathPrefix("/")`) // the default backend's router
	for _, rule := range ing.Spec.Rules {
		host := 0
		if rule.Host != "" {
			host = len("HostRegexp()") + len(strconv.Quote(strings.Replace(rule.Host, "*.", "{subdomain:[a-zA-Z0-9-]+}.", 1))) + len(" && ")
		}
		paths := []string{""}
		if rule.HTTP != nil {
			paths = paths[:0]
			for _, p := range rule.HTTP.Paths {
				paths = append(paths, p.Path)
			}
		}
		for _, p := range paths {
			n := host
			if p != "" {
				n += len("(PathRegexp() || PathPrefix())") + len(strconv.Quote(p)) + len(strconv.Quote(p+"/"))
			}
			longest = max(longest, n)
		}
	}
	return longest
}

// ingressBackends are the Services an Ingress sends to (its default backend and its paths'),
// in its own namespace, each once.
func ingressBackends(ing networkingv1.Ingress) []Backend {
	var out []Backend
	add := func(b *networkingv1.IngressBackend) {
		if b == nil || b.Service == nil || b.Service.Name == "" {
			return
		}
		nb := Backend{Kind: "Service", Namespace: ing.Namespace, Name: b.Service.Name}
		if !slices.Contains(out, nb) {
			out = append(out, nb)
		}
	}
	add(ing.Spec.DefaultBackend)
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			add(&p.Backend)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for x := range strings.SplitSeq(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ingressNotServed says why Traefik does not serve an Ingress ("" when it does): its class is
// another controller's (traefik/traefik pkg/provider/kubernetes/ingress/kubernetes.go
// shouldProcessIngress: only IngressClasses of controller traefik.io/ingress-controller), or it
// has no class and Traefik's class is not the default. Without IngressClasses, the class name
// is the hint.
func ingressNotServed(classes []networkingv1.IngressClass, ing networkingv1.Ingress) string {
	class := ""
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	if class == "" {
		class = ing.Annotations["kubernetes.io/ingress.class"]
	}
	if len(classes) == 0 {
		if class == "" || strings.Contains(class, "traefik") {
			return ""
		}
		return fmt.Sprintf("its class %q is not Traefik's", class)
	}
	for _, c := range classes {
		if c.Name == class && !strings.HasPrefix(c.Spec.Controller, "traefik.io/") {
			return fmt.Sprintf("its class %s belongs to controller %s, not to Traefik", class, c.Spec.Controller)
		}
		if !strings.HasPrefix(c.Spec.Controller, "traefik.io/") {
			continue
		}
		if c.Name == class || (class == "" && c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true") {
			return ""
		}
	}
	if class == "" {
		return "it has no class and Traefik's IngressClass is not the default"
	}
	return fmt.Sprintf("no IngressClass %s of Traefik's controller exists", class)
}

// middlewareIndex resolves middleware references and tells which authenticate.
type middlewareIndex struct {
	byKey map[string]unstructured.Unstructured // "namespace/name"
	// byID is the same by the CRD provider's middleware name, "namespace-name@kubernetescrd"
	// (Traefik appends the namespace internally: traefik/traefik docs/content/reference/
	// routing-configuration/kubernetes/http/middleware.md). Two keys can share an ID: the
	// first in sorted order wins here, so that the answer does not depend on map order.
	byID map[string]string
	// known is false when the Middleware CRDs are not installed or unreadable: names are
	// then the only hint.
	known bool
	// memo holds each middleware's answer at each depth, so that a chain is read once however
	// many routes and chains name it: a tenant's chain of 200 self-references (4 KB) made the
	// unmemoised walk visit 200^3 members, minutes of work in every doctor run (issue 23).
	memo map[authKey]authAnswer
	// evaluations counts the middlewares read (not answered from memo): the work bound tests read.
	evaluations *int
}

type authKey struct {
	key   string // "namespace/name"
	depth int
}

type authAnswer struct {
	kind string
	fa   *ForwardAuth
}

// chainDepth is how deep chains are followed. Traefik itself follows a chain to any depth and
// refuses a cycle ("recursion detected", github.com/traefik/traefik/v3 pkg/server/middleware/
// middlewares.go, checkRecursion); three levels cover every chain of the corpus.
const chainDepth = 3

func newMiddlewareIndex(s *builder) middlewareIndex {
	idx := middlewareIndex{byKey: map[string]unstructured.Unstructured{}, memo: map[authKey]authAnswer{}, evaluations: new(int)}
	idx.known = s.MiddlewaresInstalled
	idx.byID = map[string]string{}
	for _, m := range s.Middlewares {
		key := m.GetNamespace() + "/" + m.GetName()
		idx.byKey[key] = m
		id := m.GetNamespace() + "-" + m.GetName()
		if prev, ok := idx.byID[id]; !ok || key < prev {
			idx.byID[id] = key
		}
	}
	return idx
}

// resolve fills Found, Auth and ForwardAuth; the Ingress annotation form is
// "namespace-name@kubernetescrd".
func (idx middlewareIndex) resolve(ref *MiddlewareRef) {
	m, ok := idx.lookup(ref)
	if ok {
		ref.Found = true
		ref.Namespace, ref.Name = m.GetNamespace(), m.GetName()
		ref.Auth, ref.Forward = idx.auth(m, chainDepth)
		ref.RedirectScheme, _, _ = unstructured.NestedString(m.Object, "spec", "redirectScheme", "scheme")
		if ref.Forward != nil {
			ref.ForwardAuth = ref.Forward.Address
		}
		return
	}
	if !idx.known && LooksLikeAuth(ref.Raw) {
		ref.Auth = "by its name only, the Middleware CRD could not be read"
	}
}

func (idx middlewareIndex) lookup(ref *MiddlewareRef) (unstructured.Unstructured, bool) {
	if ref.Name != "" && !strings.Contains(ref.Name, "@") {
		m, ok := idx.byKey[ref.Namespace+"/"+ref.Name]
		return m, ok
	}
	raw := strings.TrimSuffix(ref.Name, "@kubernetescrd")
	if ref.Name == "" {
		raw = strings.TrimSuffix(ref.Raw, "@kubernetescrd")
	}
	if key, ok := idx.byID[raw]; ok {
		return idx.byKey[key], true
	}
	return unstructured.Unstructured{}, false
}

// auth says how the middleware authenticates ("" when it does not) and its forwardAuth when it
// is one. Chains are followed chainDepth levels deep, each middleware read once per depth.
func (idx middlewareIndex) auth(m unstructured.Unstructured, depth int) (string, *ForwardAuth) {
	k := authKey{key: m.GetNamespace() + "/" + m.GetName(), depth: depth}
	if a, ok := idx.memo[k]; ok {
		return a.kind, a.fa
	}
	kind, fa := idx.readAuth(m, depth)
	idx.memo[k] = authAnswer{kind: kind, fa: fa}
	return kind, fa
}

func (idx middlewareIndex) readAuth(m unstructured.Unstructured, depth int) (string, *ForwardAuth) {
	*idx.evaluations++
	spec, _ := m.Object["spec"].(map[string]any)
	if fa, ok := spec["forwardAuth"].(map[string]any); ok {
		out := &ForwardAuth{Middleware: m.GetNamespace() + "/" + m.GetName()}
		out.Address, _ = fa["address"].(string)
		out.PreserveLocationHeader, _ = fa["preserveLocationHeader"].(bool)
		out.AuthSigninURL, _ = fa["authSigninURL"].(string)
		return "forwardAuth", out
	}
	for _, k := range []string{"basicAuth", "digestAuth"} {
		if _, ok := spec[k]; ok {
			return k, nil
		}
	}
	if plugin, ok := spec["plugin"].(map[string]any); ok {
		names := make([]string, 0, len(plugin))
		for name := range plugin {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if LooksLikeAuth(name) {
				return "plugin " + name, nil
			}
		}
	}
	if depth > 0 {
		// Read in place: NestedSlice would deep-copy the list at every visit.
		chain, _ := spec["chain"].(map[string]any)
		members, _ := chain["middlewares"].([]any)
		for _, x := range members {
			c, _ := x.(map[string]any)
			name, _ := c["name"].(string)
			ns, _ := c["namespace"].(string)
			if ns == "" {
				ns = m.GetNamespace()
			}
			if next, ok := idx.byKey[ns+"/"+name]; ok {
				if k, fa := idx.auth(next, depth-1); k != "" {
					return "chain " + m.GetName() + " > " + k, fa
				}
			}
		}
	}
	return "", nil
}

// entryPointAuth credits a route without an authenticating middleware of its own with its entry
// points' middlewares, when every entry point through which the LAN reaches it has an
// authenticating one (a Middleware of the cluster named name@kubernetescrd; a middleware of
// another provider, @file, is not read and earns no credit).
func (idx middlewareIndex) entryPointAuth(r *Route) {
	if r.Authentication() != "" || r.Reach != ReachLAN {
		return
	}
	var first *MiddlewareRef
	for _, e := range r.Via {
		if !e.Exposed() {
			continue
		}
		var found *MiddlewareRef
		for _, raw := range e.Middlewares {
			if !strings.HasSuffix(raw, "@kubernetescrd") {
				continue
			}
			ref := MiddlewareRef{Raw: raw}
			idx.resolve(&ref)
			if ref.Found && ref.Auth != "" {
				ref.Raw = "entry point " + e.Name + ": " + raw
				found = &ref
				break
			}
		}
		if found == nil {
			return
		}
		if first == nil {
			first = found
		}
	}
	if first != nil {
		r.Middlewares = append(r.Middlewares, *first)
	}
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
		if kind, _ := idx.auth(idx.byKey[k], chainDepth); kind != "" {
			return k
		}
	}
	return ""
}

// ProbeHost is the name the DNS and HTTPS probes ask for, and where it came from.
type ProbeHost struct {
	Name   string
	Source string
	// ForwardAuth is the forwardAuth address of the route it came from ("" when none): the
	// HTTPS checks expect the redirect that this authentication answers. Forward is that
	// forwardAuth (nil when none).
	ForwardAuth string
	Forward     *ForwardAuth
	// Route names the served route it is a host of ("" when none: the zone apex, or a --host
	// that no served route names).
	Route string
	// Redirect is where its anonymous redirect may legitimately point (see Setup.redirectTargets).
	Redirect RedirectTargets
}

// chooseProbeHost takes host (--host); else a host of a route the proxy serves inside the zone
// and the LAN reaches, preferring a route surely served, reached on 443, with an
// authenticating middleware (the forward-auth that answers 302), then the first name in order;
// else the zone apex. A route Traefik refuses or does not serve is never chosen.
func chooseProbeHost(host string, z zone.Zone, routes []Route) ProbeHost {
	if h := strings.TrimSuffix(strings.TrimSpace(host), "."); h != "" {
		ph := ProbeHost{Name: strings.ToLower(h), Source: "--host"}
		for _, r := range routes {
			if r.Served && r.NotServed == "" && routeHasHost(r, ph.Name) {
				ph.fromRoute(r)
				break
			}
		}
		return ph
	}
	if z.IsZero() {
		return ProbeHost{}
	}
	type candidate struct {
		host              string
		route             int
		auth, https, sure bool
	}
	var found []candidate
	for i, r := range routes {
		if !r.Served || r.NotServed != "" || r.Reach == ReachNotLAN {
			continue
		}
		auth := r.Authentication() != ""
		for _, h := range r.Hosts {
			// A wildcard, a host outside the zone, or text that is not a host name (Host()
			// is free text someone else wrote; it ends in DNS questions and printed commands).
			if strings.Contains(h, "*") || !z.Contains(h) || len(validation.IsDNS1123Subdomain(h)) > 0 {
				continue
			}
			found = append(found, candidate{host: h, route: i, auth: auth,
				https: r.HTTPS() || r.Reach == ReachUnknown, sure: r.ServedUnsure == ""})
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i], found[j]
		switch {
		case a.sure != b.sure:
			return a.sure
		case a.https != b.https:
			return a.https
		case a.auth != b.auth:
			return a.auth
		}
		return a.host < b.host
	})
	if len(found) > 0 {
		c := found[0]
		ph := ProbeHost{Name: c.host}
		ph.fromRoute(routes[c.route])
		ph.Source = ph.Route
		if c.auth {
			ph.Source += " (a route with an authentication middleware)"
		}
		return ph
	}
	return ProbeHost{Name: z.String(), Source: "zone apex (no route of the proxy for the zone was found; name one with --host)"}
}

// fromRoute records the route the probe host came from and its forwardAuth.
func (ph *ProbeHost) fromRoute(r Route) {
	ph.Route = r.Object
	ph.ForwardAuth = r.ForwardAuthAddress()
	if fa := r.ForwardAuth(); fa != nil {
		c := *fa
		ph.Forward = &c
	}
}

func routeHasHost(r Route, host string) bool {
	return slices.Contains(r.Hosts, host)
}
