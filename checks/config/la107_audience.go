package config

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Audience is LA107: once the proxy answers on the node addresses, every route it serves
// through an entry point the LAN reaches is reachable by the whole LAN, not only by VPN members:
// the zone's hosts, hosts outside the zone (the Host header decides, not the address), and
// TCP/UDP routers (la107_streams.go). A route without an authentication middleware (forwardAuth, basicAuth,
// digestAuth, or a chain holding one) must be reviewed: an application with its own login may
// be fine; mark it reviewed with the annotation lanaccess.io/lan-audience=reviewed. The routes
// are discovery's model (Setup.Routes, Traefik's semantics): the same the probe host is chosen
// from. A route Traefik refuses (a cross-namespace middleware without allowCrossNamespace) is
// not protected, it is absent: its host answers 404.
func Audience(env *Env) engine.Check {
	return check(env, "LA107", audience)
}

func audience(s *kube.Setup) engine.Outcome {
	findings := implementationFindings(s)
	for _, r := range s.Routes {
		findings = append(findings, judgeRoute(s, r)...)
	}
	for _, r := range s.StreamRoutes {
		findings = append(findings, judgeStream(s, r)...)
	}
	return engine.Partial("LA107", findings, unreadOf(s, "LA107", s.ProxyService.Namespace))
}

func judgeRoute(s *kube.Setup, r proxyroute.Route) []engine.Finding {
	ev := map[string]any{"hosts": r.Hosts, "middlewares": refsRaw(r.Middlewares), "reach": string(r.Reach)}
	via := make([]string, 0, len(r.Via))
	for _, e := range r.Via {
		via = append(via, e.Label())
	}
	if len(via) > 0 {
		ev["entryPoints"] = via
	}
	if len(r.Listeners) > 0 {
		ev["listeners"] = r.Listeners
	}
	if r.Unjudged != "" && r.Served {
		return unjudgedRoute(r, ev)
	}
	switch {
	case !r.Served && !r.Refused:
		return []engine.Finding{{Code: "LA107-NOT-SERVED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("not served by the proxy (%s): %s is not reached through the LAN addresses by this route, and its audience is not checked here", r.NotServed, hostsText(r.Hosts))}}
	case r.Refused && r.RefusedStatus != 0:
		// Proven on the lab's Traefik (lab/e2e traefik_gateway_test.go): the router stays, its
		// service is an error.
		return []engine.Finding{{Code: "LA107-ROUTE-REFUSED", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message:     fmt.Sprintf("Traefik cannot serve this rule (%s), so %s answers %d: nothing is exposed by it, but it is not the route it looks like", r.NotServed, hostsText(r.Hosts), r.RefusedStatus),
			Remediation: failingRuleRemedy(r)}}
	case r.Refused:
		return []engine.Finding{{Code: "LA107-ROUTE-REFUSED", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message:     fmt.Sprintf("Traefik refuses this route (%s), so %s answers 404: nothing is exposed by it, but it is not the protected route it looks like", r.NotServed, hostsText(r.Hosts)),
			Remediation: refusedRemedy(s, r)}}
	case r.ServedUnsure != "":
		return []engine.Finding{{Code: "LA107-ROUTE-REFUSED", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message:     fmt.Sprintf("Traefik may refuse this route (%s): whether %s is served cannot be told", r.ServedUnsure, hostsText(r.Hosts)),
			Remediation: refusedRemedy(s, r)}}
	case r.Reach == proxyroute.ReachNotLAN:
		return []engine.Finding{{Code: "LA107-NOT-ON-LAN", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: "not reachable from the LAN: " + r.ReachWhy}}
	}
	if s.Implementation.Name == proxyroute.ImplIngressNginx && r.Kind == "Ingress" {
		return nginxAudience(s, r, ev)
	}
	if s.Implementation.Name == proxyroute.ImplIstio && r.Kind == "HTTPRoute" {
		return istioAudience(s, r, ev)
	}
	var missing []string
	for _, m := range r.Middlewares {
		if !m.Found && s.MiddlewaresKnown && !strings.Contains(m.Name, "@") {
			missing = append(missing, m.Raw)
		}
	}
	if len(missing) > 0 {
		// Traefik disables a router whose middleware is missing: the route is not served at
		// all, so its audience is moot until the reference is fixed.
		return []engine.Finding{{Code: "LA107-MIDDLEWARE-MISSING", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("references middleware %s, which does not exist: Traefik disables the router, so %s answers 404", strings.Join(missing, ", "), hostsText(r.Hosts)),
			Remediation: "# a diagnosis, not a fix doctor can prove: which middleware was meant is for you to say\n" +
				remedy.Command("kubectl", "get", "middlewares.traefik.io", "-A") + "   # create the middleware or fix the reference in " + r.Object}}
	}
	if r.Authentication() != "" {
		return nil
	}
	return unauthenticatedRoute(s, r, ev)
}

// unauthenticatedRoute judges a served route without authentication: one that only redirects or
// serves nothing exposes nothing; a reviewed one or the auth server's own is information; any
// other is open to the whole LAN.
func unauthenticatedRoute(s *kube.Setup, r proxyroute.Route, ev map[string]any) []engine.Finding {
	if how := r.RedirectOnly(); how != "" {
		// Proven on the lab's Traefik (lab/e2e traefik_routes_test.go): such a router answers
		// every request with the redirect and never reaches its service.
		return []engine.Finding{{Code: "LA107-REDIRECT-ONLY", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("%s only redirects: Traefik answers every request with %s before any service, so it exposes nothing to the LAN (the HTTPS route of the host is judged on its own)", hostsText(r.Hosts), how)}}
	}
	if r.ServesNothing() {
		return []engine.Finding{{Code: "LA107-SERVES-NOTHING", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: hostsText(r.Hosts) + " serves nothing: its only service is Traefik's noop@internal, which answers 418 with no content, so it exposes nothing to the LAN"}}
	}
	if r.Reviewed {
		return []engine.Finding{{Code: "LA107-REVIEWED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("no authentication middleware on %s, reviewed for the LAN (%s=reviewed)", hostsText(r.Hosts), proxyroute.ReviewedAnnotation)}}
	}
	if r.AuthPortal != "" {
		return []engine.Finding{{Code: "LA107-AUTH-PORTAL", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("%s serves the authentication server itself (%s): it is the login the other routes send anonymous clients to, so it answers them by design; its own login protects what lies behind it", hostsText(r.Hosts), r.AuthPortal)}}
	}
	code := "LA107-NO-AUTH"
	msg := fmt.Sprintf("no authentication middleware on %s: it is now reachable by the whole LAN, not only by VPN members", hostsText(r.Hosts))
	if !r.InZone(s.Zone) {
		// Traefik's Host matcher reads the request's Host header only, never the address it came
		// to (traefik/traefik v3.7.9 pkg/muxer/http/matcher.go host): a host the zone does not
		// name is reached by any LAN client that sends it (its own DNS, curl --resolve).
		code = "LA107-OTHER-HOST"
		msg = fmt.Sprintf("no authentication middleware on %s, outside the zone %s: the proxy serves it on the node addresses too, so any LAN client that sends this Host (its own DNS, an /etc/hosts entry, curl --resolve) reaches it", hostsText(r.Hosts), s.Zone.String())
	}
	if r.Reach == proxyroute.ReachUnknown {
		msg = fmt.Sprintf("no authentication middleware on %s, and whether the LAN reaches it cannot be told (%s): if it does, the whole LAN reaches it, not only VPN members", hostsText(r.Hosts), r.ReachWhy)
	}
	return []engine.Finding{{Code: code, Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
		Message: msg, Remediation: audienceRemedy(s, r)}}
}

func refsRaw(refs []proxyroute.MiddlewareRef) []string {
	out := make([]string, 0, len(refs))
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

// authFor is the authenticating middleware a route of namespace ns can name: one of its own
// namespace, else (when Traefik allows cross-namespace references) any. copyFrom is set when
// only another namespace has one: it must be copied into ns first.
func authFor(s *kube.Setup, ns string) (name string, copyFrom *unstructured.Unstructured) {
	var other *unstructured.Unstructured
	for i := range s.Middlewares {
		m := &s.Middlewares[i]
		if !isAuthMiddleware(s, m) {
			continue
		}
		if m.GetNamespace() == ns {
			return m.GetName(), nil
		}
		if other == nil {
			other = m
		}
	}
	if other == nil {
		return "", nil
	}
	return other.GetName(), other
}

// isAuthMiddleware reports whether the route model resolves m as authenticating.
func isAuthMiddleware(s *kube.Setup, m *unstructured.Unstructured) bool {
	for _, r := range s.Routes {
		for _, ref := range r.Middlewares {
			if ref.Found && ref.Auth != "" && ref.Namespace == m.GetNamespace() && ref.Name == m.GetName() {
				return true
			}
		}
	}
	return s.AuthMiddleware == m.GetNamespace()+"/"+m.GetName()
}

// middlewareCopy is m with its spec, in namespace ns: a Middleware a route of ns may name
// without a cross-namespace reference.
func middlewareCopy(m *unstructured.Unstructured, ns string) map[string]any {
	return map[string]any{
		"apiVersion": m.GetAPIVersion(), "kind": "Middleware",
		"metadata": metav1.ObjectMeta{Name: m.GetName(), Namespace: ns},
		"spec":     m.Object["spec"],
	}
}

// audienceRemedy adds an authentication middleware the route may name (its namespace's, else a
// copy of another namespace's: Traefik refuses cross-namespace references by default), or
// marks the route reviewed when the application has its own login.
func audienceRemedy(s *kube.Setup, r proxyroute.Route) string {
	review := "# or, if the application has its own login and may face the LAN:\n" +
		remedy.Kubectl(r.Namespace, "annotate", strings.ToLower(r.Kind), r.Name, proxyroute.ReviewedAnnotation+"=reviewed")
	name, copyFrom := authFor(s, r.Namespace)
	var steps []string
	crossNS := ""
	switch {
	case name == "":
		name = "AUTH-MIDDLEWARE"
		steps = append(steps, remedy.Commentf("# no authentication middleware exists yet: create one (forwardAuth to your identity provider) in namespace %s and name it below", r.Namespace))
	case copyFrom != nil && r.Kind == "Ingress":
		name = copyFrom.GetNamespace() + "-" + name // an Ingress names it across providers
	case copyFrom != nil && r.Kind == "IngressRoute" && s.Traefik.AllowCrossNamespaceKnown && s.Traefik.AllowCrossNamespace:
		crossNS = copyFrom.GetNamespace()
	case copyFrom != nil:
		why := "Traefik refuses a middleware of another namespace unless allowCrossNamespace is on"
		if r.Kind == "HTTPRoute" {
			why = "an HTTPRoute's ExtensionRef names a middleware of its own namespace"
		}
		steps = append(steps, remedy.Commentf("# %s: copy %s/%s into %s", why, copyFrom.GetNamespace(), copyFrom.GetName(), r.Namespace),
			remedy.Apply(remedy.YAML(middlewareCopy(copyFrom, r.Namespace))))
	}
	switch r.Kind {
	case "Ingress":
		if copyFrom == nil {
			name = r.Namespace + "-" + name
		}
		value := strings.Join(append(refsRaw(r.Middlewares), name+"@kubernetescrd"), ",")
		steps = append(steps, remedy.Kubectl(r.Namespace, "annotate", "ingress", r.Name, proxyroute.TraefikMiddlewaresAnnotation+"="+value, "--overwrite"))
	case "HTTPRoute":
		filter := map[string]any{"type": "ExtensionRef", "extensionRef": map[string]string{"group": "traefik.io", "kind": "Middleware", "name": name}}
		op := remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/rules/%d/filters", r.Index), Value: []any{filter}}
		if r.RuleFilters > 0 {
			op = remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/rules/%d/filters/-", r.Index), Value: filter}
		}
		steps = append(steps, remedy.JSONPatch(r.Namespace, "httproute.gateway.networking.k8s.io", r.Name, op))
	default:
		ref := map[string]string{"name": name}
		if crossNS != "" {
			ref["namespace"] = crossNS
		}
		op := remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/routes/%d/middlewares", r.Index), Value: []map[string]string{ref}}
		if len(r.Middlewares) > 0 {
			op = remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/routes/%d/middlewares/-", r.Index), Value: ref}
		}
		steps = append(steps, remedy.JSONPatch(r.Namespace, "ingressroute", r.Name, op))
	}
	return strings.Join(append(steps, review), "\n")
}

// failingRuleRemedy makes Traefik serve an HTTPRoute rule it answers with 500: a ReferenceGrant
// in the backends' namespace when they lack one (the grant Traefik's isReferenceGranted looks
// for), else the filter to fix. Once served, the rule is judged like any other.
func failingRuleRemedy(r proxyroute.Route) string {
	if len(r.MissingGrants) == 0 {
		return remedy.Comment("a diagnosis: use only the filters Traefik's Gateway provider supports (RequestRedirect, RequestHeaderModifier,") + "\n" +
			remedy.Comment("ResponseHeaderModifier, URLRewrite, ExtensionRef to a traefik.io Middleware) in "+r.Object)
	}
	byNS := map[string][]proxyroute.Backend{}
	var order []string
	for _, b := range r.MissingGrants {
		if _, ok := byNS[b.Namespace]; !ok {
			order = append(order, b.Namespace)
		}
		byNS[b.Namespace] = append(byNS[b.Namespace], b)
	}
	steps := []string{remedy.Commentf("# if HTTPRoutes of namespace %s may send requests there: let them, in the backends' namespace", r.Namespace)}
	for _, ns := range order {
		steps = append(steps, remedy.Apply(remedy.YAML(proxyroute.ReferenceGrantFor(r.Namespace, byNS[ns]).Object)))
	}
	return strings.Join(steps, "\n")
}

// refusedRemedy makes Traefik accept a route it refuses for a cross-namespace middleware:
// copy the middleware into the route's namespace and name it there (what the reference meant),
// or turn allowCrossNamespace on for the whole proxy.
func refusedRemedy(s *kube.Setup, r proxyroute.Route) string {
	var steps []string
	for i, m := range r.Middlewares {
		if m.Namespace == r.Namespace && !strings.Contains(m.Name, "@") {
			continue
		}
		name := strings.TrimSuffix(m.Name, "@kubernetescrd")
		var src *unstructured.Unstructured
		for j := range s.Middlewares {
			x := &s.Middlewares[j]
			if (x.GetNamespace() == m.Namespace && x.GetName() == m.Name) || x.GetNamespace()+"-"+x.GetName() == name {
				src = x
			}
		}
		if src == nil {
			steps = append(steps, remedy.Commentf("# middleware %s was not found: create it in namespace %s", m.Raw, r.Namespace))
		} else {
			name = src.GetName()
			steps = append(steps, remedy.Commentf("# copy %s/%s into namespace %s, then name it without a namespace:", src.GetNamespace(), src.GetName(), r.Namespace),
				remedy.Apply(remedy.YAML(middlewareCopy(src, r.Namespace))))
		}
		if r.Kind == "IngressRoute" {
			steps = append(steps, remedy.JSONPatch(r.Namespace, "ingressroute", r.Name,
				remedy.PatchOp{Op: "replace", Path: fmt.Sprintf("/spec/routes/%d/middlewares/%d", r.Index, i), Value: map[string]string{"name": name}}))
		}
	}
	key := "providers.kubernetesCRD.allowCrossNamespace=true"
	if s.ProxyWorkload != nil {
		if o, ok := kube.OwnerOf(s.ProxyWorkload); ok {
			steps = append(steps, remedy.Commentf("# or let every route of the cluster name middlewares of other namespaces: set the values key %s in %s", key, o.Describe()))
			return strings.Join(steps, "\n")
		}
	}
	steps = append(steps, "# or let every route of the cluster name middlewares of other namespaces: run Traefik with --providers.kubernetescrd.allowCrossNamespace=true")
	return strings.Join(steps, "\n")
}
