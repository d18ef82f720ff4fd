package checks

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// Audience is LA107: once the proxy answers on the node addresses, every route it serves in
// the zone is reachable by the whole LAN, not only by VPN members. A route without an
// authentication middleware (forwardAuth, basicAuth, digestAuth, or a chain holding one) must
// be reviewed: an application with its own login may be fine; mark it reviewed with the
// annotation lanaccess.io/lan-audience=reviewed.
func Audience(env *Env) engine.Check {
	return engine.Check{
		ID:        "LA107",
		Title:     "Every route of the proxy in the zone has an authentication middleware",
		DependsOn: []string{"LA001"},
		Run:       func(ctx context.Context) engine.Outcome { return audience(env) },
	}
}

// ReviewedAnnotation on an IngressRoute or Ingress says its audience was reviewed for the LAN
// (the application has its own login, or is meant to be public).
const ReviewedAnnotation = "lanaccess.io/lan-audience"

// traefikMiddlewaresAnnotation lists the middlewares of an Ingress's Traefik router
// ("namespace-name@kubernetescrd", comma-separated).
const traefikMiddlewaresAnnotation = "traefik.ingress.kubernetes.io/router.middlewares"

// lanRoute is one route the proxy serves, with what protects it.
type lanRoute struct {
	Object      string // "IngressRoute monitoring/grafana"
	Namespace   string
	Name        string
	Kind        string // IngressRoute or Ingress
	Index       int    // route index in an IngressRoute
	Hosts       []string
	Middlewares []middlewareRef
	Reviewed    bool
}

type middlewareRef struct {
	Namespace, Name string
	Raw             string
}

func audience(env *Env) engine.Outcome {
	if o, stop := noSetup(env); stop {
		return o
	}
	s := env.Setup
	zone := strings.TrimSuffix(s.Zone, ".")
	mws := newMiddlewareIndex(s)
	var routes []lanRoute
	for _, ir := range s.IngressRoutes {
		routes = append(routes, ingressRouteRoutes(ir)...)
	}
	for _, ing := range s.Ingresses {
		if servedByProxy(s, ing) {
			routes = append(routes, ingressAsRoute(ing))
		}
	}
	var findings []engine.Finding
	for _, r := range routes {
		if !inZone(r.Hosts, zone) {
			continue
		}
		findings = append(findings, judgeRoute(r, mws)...)
	}
	unread := unreadReason(env, routeReads(s)...)
	return partialOutcome(findings, unread)
}

// routeReads are the reads the check relies on: Ingresses, and the Traefik CRDs that exist.
func routeReads(s *kube.Setup) []string {
	keys := []string{kube.ReadKey("networking.k8s.io", "ingresses", "")}
	for _, r := range append(kube.TraefikIngressRoutes(), kube.TraefikMiddlewares()...) {
		keys = append(keys, r.Key())
	}
	return keys
}

var (
	traefikHostRule = regexp.MustCompile(`Host(?:SNI)?\(([^)]*)\)`)
	traefikQuoted   = regexp.MustCompile("[`\"]([^`\"]+)[`\"]")
)

// ingressRouteRoutes reads the routes of an IngressRoute (traefik.io or traefik.containo.us).
func ingressRouteRoutes(ir unstructured.Unstructured) []lanRoute {
	list, _, _ := unstructured.NestedSlice(ir.Object, "spec", "routes")
	var out []lanRoute
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		r := lanRoute{
			Object: fmt.Sprintf("IngressRoute %s/%s", ir.GetNamespace(), ir.GetName()), Kind: "IngressRoute",
			Namespace: ir.GetNamespace(), Name: ir.GetName(), Index: i,
			Reviewed: ir.GetAnnotations()[ReviewedAnnotation] == "reviewed",
		}
		match, _ := m["match"].(string)
		for _, h := range traefikHostRule.FindAllStringSubmatch(match, -1) {
			for _, q := range traefikQuoted.FindAllStringSubmatch(h[1], -1) {
				r.Hosts = append(r.Hosts, strings.ToLower(q[1]))
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
			r.Middlewares = append(r.Middlewares, middlewareRef{Namespace: ns, Name: name, Raw: ns + "/" + name})
		}
		if len(list) > 1 {
			r.Object += fmt.Sprintf(" route %d", i)
		}
		out = append(out, r)
	}
	return out
}

func ingressAsRoute(ing networkingv1.Ingress) lanRoute {
	r := lanRoute{Object: fmt.Sprintf("Ingress %s/%s", ing.Namespace, ing.Name), Kind: "Ingress",
		Namespace: ing.Namespace, Name: ing.Name, Reviewed: ing.Annotations[ReviewedAnnotation] == "reviewed"}
	for _, rule := range ing.Spec.Rules {
		r.Hosts = append(r.Hosts, strings.ToLower(rule.Host))
	}
	for _, ref := range strings.Split(ing.Annotations[traefikMiddlewaresAnnotation], ",") {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			continue
		}
		r.Middlewares = append(r.Middlewares, middlewareRef{Raw: ref})
	}
	return r
}

// servedByProxy: the Ingress's class is handled by Traefik (or it has no class and Traefik's
// class is the default). Without IngressClasses, the class name is the hint.
func servedByProxy(s *kube.Setup, ing networkingv1.Ingress) bool {
	class := ""
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	if class == "" {
		class = ing.Annotations["kubernetes.io/ingress.class"]
	}
	if len(s.IngressClasses) == 0 {
		return class == "" || strings.Contains(class, "traefik")
	}
	for _, c := range s.IngressClasses {
		if !strings.HasPrefix(c.Spec.Controller, "traefik.io/") {
			continue
		}
		if c.Name == class || (class == "" && c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true") {
			return true
		}
	}
	return false
}

// inZone: some host is in the zone, or the route has no host rule (it answers any name,
// the zone's included).
func inZone(hosts []string, zone string) bool {
	if len(hosts) == 0 {
		return true
	}
	for _, h := range hosts {
		h = strings.TrimPrefix(strings.TrimSuffix(h, "."), "*.")
		if h == "" || zone == "" || h == zone || strings.HasSuffix(h, "."+zone) {
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

func newMiddlewareIndex(s *kube.Setup) middlewareIndex {
	idx := middlewareIndex{byKey: map[string]unstructured.Unstructured{}}
	for _, r := range kube.TraefikMiddlewares() {
		if s.Installed[r.Key()] {
			idx.known = true
		}
	}
	for _, m := range s.Middlewares {
		idx.byKey[m.GetNamespace()+"/"+m.GetName()] = m
	}
	return idx
}

// lookup resolves a reference; the Ingress annotation form is "namespace-name@kubernetescrd".
func (idx middlewareIndex) lookup(ref middlewareRef) (unstructured.Unstructured, bool) {
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
			if looksLikeAuth(name) {
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

func looksLikeAuth(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "oidc", "oauth", "sso", "jwt", "login"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// firstAuth is an authenticating middleware of the cluster, to suggest in remediations.
func (idx middlewareIndex) firstAuth() (string, string, bool) {
	keys := make([]string, 0, len(idx.byKey))
	for k := range idx.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if idx.authKind(idx.byKey[k], 3) != "" {
			ns, name, _ := strings.Cut(k, "/")
			return ns, name, true
		}
	}
	return "", "", false
}

func judgeRoute(r lanRoute, idx middlewareIndex) []engine.Finding {
	var missing []string
	auth := ""
	for _, ref := range r.Middlewares {
		m, ok := idx.lookup(ref)
		switch {
		case ok:
			if k := idx.authKind(m, 3); k != "" && auth == "" {
				auth = k + " (" + ref.Raw + ")"
			}
		case idx.known:
			missing = append(missing, ref.Raw)
		case looksLikeAuth(ref.Raw) && auth == "":
			auth = "by its name only, the Middleware CRD could not be read (" + ref.Raw + ")"
		}
	}
	ev := map[string]any{"hosts": r.Hosts, "middlewares": refsRaw(r.Middlewares)}
	var out []engine.Finding
	if len(missing) > 0 {
		// Traefik disables a router whose middleware is missing: the route is not served at
		// all, so its audience is moot until the reference is fixed.
		return append(out, engine.Finding{Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message:     fmt.Sprintf("references middleware %s, which does not exist: Traefik disables the router, so %s answers 404", strings.Join(missing, ", "), hostsText(r.Hosts)),
			Remediation: fmt.Sprintf("kubectl get middlewares.traefik.io -A   # create the middleware or fix the reference in %s", r.Object)})
	}
	if auth != "" {
		return out
	}
	if r.Reviewed {
		return append(out, engine.Finding{Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("no authentication middleware on %s, reviewed for the LAN (%s=reviewed)", hostsText(r.Hosts), ReviewedAnnotation)})
	}
	return append(out, engine.Finding{Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
		Message:     fmt.Sprintf("no authentication middleware on %s: it is now reachable by the whole LAN, not only by VPN members", hostsText(r.Hosts)),
		Remediation: audienceRemedy(r, idx)})
}

func refsRaw(refs []middlewareRef) []string {
	out := []string{}
	for _, r := range refs {
		out = append(out, r.Raw)
	}
	return out
}

func hostsText(hosts []string) string {
	if len(hosts) == 0 {
		return "every host (no Host rule)"
	}
	return strings.Join(hosts, ", ")
}

// audienceRemedy adds the forward-auth middleware the other routes use, or marks the route
// reviewed when the application has its own login.
func audienceRemedy(r lanRoute, idx middlewareIndex) string {
	ns, name, found := idx.firstAuth()
	if !found {
		ns, name = "NAMESPACE", "AUTH-MIDDLEWARE"
	}
	review := fmt.Sprintf("# or, if the application has its own login and may face the LAN:\nkubectl -n %s annotate %s %s %s=reviewed", r.Namespace, strings.ToLower(r.Kind), r.Name, ReviewedAnnotation)
	if r.Kind == "Ingress" {
		value := strings.Join(append(refsRaw(r.Middlewares), ns+"-"+name+"@kubernetescrd"), ",")
		return fmt.Sprintf("kubectl -n %s annotate ingress %s %s=%s --overwrite\n%s",
			r.Namespace, r.Name, traefikMiddlewaresAnnotation, value, review)
	}
	path, value := fmt.Sprintf("/spec/routes/%d/middlewares", r.Index), fmt.Sprintf(`[{"name":"%s","namespace":"%s"}]`, name, ns)
	if len(r.Middlewares) > 0 {
		path, value = path+"/-", fmt.Sprintf(`{"name":"%s","namespace":"%s"}`, name, ns)
	}
	return fmt.Sprintf("kubectl -n %s patch ingressroute %s --type=json -p '[{\"op\":\"add\",\"path\":\"%s\",\"value\":%s}]'\n%s",
		r.Namespace, r.Name, path, value, review)
}
