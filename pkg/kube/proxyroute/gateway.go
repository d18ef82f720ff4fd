package proxyroute

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// Gateway API routes of the proxy: an HTTPRoute is served by Traefik when it attaches to a
// listener of a Gateway whose GatewayClass names Traefik's controller, and Traefik serves that
// listener on the entry point whose port is the listener's (traefik/traefik v3.7.9
// pkg/provider/kubernetes/gateway/kubernetes.go: controllerName traefik.io/gateway-controller,
// entryPointName). Each rule is one route: its ExtensionRef filters naming a traefik.io
// Middleware are its middlewares (httproute.go loadHTTPRouteFilterExtensionRef, a Middleware
// of the route's namespace).

// TraefikGatewayController is the controllerName of Traefik's GatewayClasses.
const TraefikGatewayController = "traefik.io/gateway-controller"

// gatewayAPIGroup is the Gateway API's group (kube.GatewayAPIGroup, where discovery lists it).
const gatewayAPIGroup = "gateway.networking.k8s.io"

// gatewayListener is the part of a Gateway listener attachment needs.
type gatewayListener struct {
	Name     string `json:"name"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
	Hostname string `json:"hostname"`
	Allowed  struct {
		Namespaces struct {
			From     string                `json:"from"`
			Selector *metav1.LabelSelector `json:"selector"`
		} `json:"namespaces"`
		Kinds []routeGroupKind `json:"kinds"`
	} `json:"allowedRoutes"`
	TLS *listenerTLS `json:"tls"`
}

type routeGroupKind struct {
	Group *string `json:"group"`
	Kind  string  `json:"kind"`
}

type gatewaySpec struct {
	Listeners []gatewayListener `json:"listeners"`
}

type parentRef struct {
	Group       *string `json:"group"`
	Kind        *string `json:"kind"`
	Namespace   string  `json:"namespace"`
	Name        string  `json:"name"`
	SectionName string  `json:"sectionName"`
	Port        int32   `json:"port"`
}

type httpRouteSpec struct {
	ParentRefs []parentRef `json:"parentRefs"`
	Hostnames  []string    `json:"hostnames"`
	Rules      []struct {
		Filters     []routeFilter `json:"filters"`
		BackendRefs []backendRef  `json:"backendRefs"`
	} `json:"rules"`
}

// backendRef is an HTTPRoute rule's backendRef: group "" and kind Service by default, the
// route's namespace by default (Gateway API spec, BackendObjectReference).
type backendRef struct {
	Group     *string `json:"group"`
	Kind      *string `json:"kind"`
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
}

// groupKind is the reference's group ("core" for the API's "" as Traefik names it) and kind.
func (b backendRef) groupKind() (string, string) {
	group, kind := groupCore, "Service"
	if b.Group != nil && *b.Group != "" {
		group = *b.Group
	}
	if b.Kind != nil {
		kind = *b.Kind
	}
	return group, kind
}

type routeFilter struct {
	Type            string                 `json:"type"`
	RequestRedirect *requestRedirectFilter `json:"requestRedirect"`
	ExtensionRef    *struct {
		Group string `json:"group"`
		Kind  string `json:"kind"`
		Name  string `json:"name"`
	} `json:"extensionRef"`
}

// httpRoutes builds one Route per rule of every HTTPRoute.
func (s *builder) httpRoutes() []Route {
	var out []Route
	for _, hr := range s.HTTPRoutes {
		var spec httpRouteSpec
		if raw, ok := hr.Object["spec"].(map[string]any); !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec) != nil {
			continue
		}
		a, known, notServed := s.attachHTTPRoute(hr, spec)
		via, unsure := a.via, strings.Join(a.unsure, "; ")
		rules := len(spec.Rules)
		if rules == 0 {
			rules = 1 // the API defaults an HTTPRoute without rules to one matching every path
		}
		for i := range rules {
			r := httpRouteRule(hr, spec, i, notServed)
			r.ServedUnsure = unsure
			r.Listeners = a.listeners
			if i < len(spec.Rules) {
				r.Redirects = requestRedirect(spec.Rules[i].Filters)
				for _, f := range spec.Rules[i].Filters {
					if f.Type != "ExtensionRef" || f.ExtensionRef == nil || !s.middlewareFilter(f.ExtensionRef.Group, f.ExtensionRef.Kind) {
						continue
					}
					r.Middlewares = append(r.Middlewares, MiddlewareRef{Namespace: hr.GetNamespace(), Name: f.ExtensionRef.Name,
						Raw: "ExtensionRef " + hr.GetNamespace() + "/" + f.ExtensionRef.Name})
				}
			}
			for _, e := range via {
				r.EntryPoints = append(r.EntryPoints, e.Name)
			}
			s.reach(&r, via, known)
			if i < len(spec.Rules) {
				s.refuseFailingRule(&r, hr.GetNamespace(), spec.Rules[i].Filters, spec.Rules[i].BackendRefs)
			}
			out = append(out, r)
		}
	}
	return out
}

// requestRedirectFilter is the part of an HTTPRoute's RequestRedirect filter a finding names
// (gateway-api apis/v1/httproute_types.go HTTPRequestRedirectFilter).
type requestRedirectFilter struct {
	Scheme   *string `json:"scheme"`
	Hostname *string `json:"hostname"`
	Port     *int32  `json:"port"`
}

// requestRedirect says how a rule's RequestRedirect filter answers, "" when it has none.
// Traefik turns the filter into its gatewayapi RequestRedirect middleware, which answers every
// request with the redirect and never calls the next handler, whatever the rule's backendRefs
// (traefik/traefik v3.7.9 pkg/provider/kubernetes/gateway/httproute.go loadMiddlewares,
// createRequestRedirect; pkg/middlewares/gatewayapi/redirect/request_redirect.go ServeHTTP).
// Filters before it can only answer or pass, so none reaches a backend either.
func requestRedirect(filters []routeFilter) string {
	for _, f := range filters {
		if f.Type != "RequestRedirect" || f.RequestRedirect == nil {
			continue
		}
		to := "the request's own URL"
		if rr := f.RequestRedirect; rr.Scheme != nil || rr.Hostname != nil || rr.Port != nil {
			var parts []string
			if rr.Scheme != nil {
				parts = append(parts, "scheme "+*rr.Scheme)
			}
			if rr.Hostname != nil {
				parts = append(parts, "host "+*rr.Hostname)
			}
			if rr.Port != nil {
				parts = append(parts, fmt.Sprintf("port %d", *rr.Port))
			}
			to = strings.Join(parts, ", ")
		}
		return "the rule's RequestRedirect filter (to " + to + ")"
	}
	return ""
}

// httpRouteRule is rule i of an HTTPRoute as a Route: its hostnames, filters count and
// backends (notServed says why the proxy does not serve it, "" when it does).
func httpRouteRule(hr unstructured.Unstructured, spec httpRouteSpec, i int, notServed string) Route {
	r := Route{Kind: "HTTPRoute", Namespace: hr.GetNamespace(), Name: hr.GetName(), Index: i,
		Object: kubeobj.Ref("HTTPRoute", hr.GetNamespace(), hr.GetName()), Served: notServed == "", NotServed: notServed,
		Reviewed: hr.GetAnnotations()[ReviewedAnnotation] == "reviewed"}
	if len(spec.Rules) > 1 {
		r.Object += fmt.Sprintf(" rule %d", i)
	}
	for _, h := range spec.Hostnames {
		r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(h), "."))
	}
	if i < len(spec.Rules) {
		r.RuleFilters = len(spec.Rules[i].Filters)
		r.Backends = httpRouteBackends(spec.Rules[i].BackendRefs, hr.GetNamespace())
	}
	return r
}

// httpRouteBackends are the Services of a rule's backendRefs (other kinds are not Services).
func httpRouteBackends(refs []backendRef, namespace string) []Backend {
	var out []Backend
	for _, ref := range refs {
		if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Service") || ref.Name == "" {
			continue
		}
		b := Backend{Kind: "Service", Namespace: namespace, Name: ref.Name}
		if ref.Namespace != "" {
			b.Namespace = ref.Namespace
		}
		out = append(out, b)
	}
	return out
}

// attachHTTPRoute finds the Traefik listeners and entry points an HTTPRoute is served on. known
// is false when the proxy's entry points are not known; notServed says why no Traefik listener
// takes it.
func (s *builder) attachHTTPRoute(hr unstructured.Unstructured, spec httpRouteSpec) (a attachment, known bool, notServed string) {
	known = s.Traefik.EntryPointsKnown
	for _, ref := range spec.ParentRefs {
		if (ref.Group != nil && *ref.Group != gatewayAPIGroup) || (ref.Kind != nil && *ref.Kind != "Gateway") {
			continue
		}
		p := routeParent{route: hr, hostnames: spec.Hostnames, ref: ref, ns: ref.Namespace}
		if p.ns == "" {
			p.ns = hr.GetNamespace()
		}
		gw, ok := s.traefikGateway(p, &a)
		if !ok {
			continue
		}
		for _, l := range gw.Listeners {
			s.attachToListener(p, gw, l, &a)
		}
	}
	if len(a.via) == 0 && known {
		if len(a.why) == 0 {
			a.why = append(a.why, "it names no Gateway listener")
		}
		return attachment{}, known, "not attached to a Traefik listener: " + strings.Join(a.why, "; ")
	}
	return a, known, ""
}

// attachment is what an HTTPRoute's parents make of it: the entry points that serve it (and
// the listeners, "Gateway ns/name listener L (:port) on entry point E"), why a parent does not
// take it, and why it may not be served after all.
type attachment struct {
	via         []EntryPoint
	listeners   []string
	why, unsure []string
}

// routeParent is one parentRef of an HTTPRoute naming a Gateway, in its namespace ns.
type routeParent struct {
	route     unstructured.Unstructured
	hostnames []string
	ref       parentRef
	ns        string
}

func (p routeParent) gateway() string { return p.ns + "/" + p.ref.Name }

// takes says whether the parentRef names listener l (sectionName, port) and l serves HTTP.
func (p routeParent) takes(l gatewayListener) bool {
	if (p.ref.SectionName != "" && l.Name != p.ref.SectionName) || (p.ref.Port != 0 && l.Port != p.ref.Port) {
		return false
	}
	return l.Protocol == "HTTP" || l.Protocol == "HTTPS"
}

// traefikGateway reads the Gateway of p when Traefik serves it: the Gateway exists, its class is
// Traefik's, Traefik has not refused the route, and the proxy runs the Gateway provider (or
// that is not known, which a is told). Else a is told why not, and ok is false.
func (s *builder) traefikGateway(p routeParent, a *attachment) (gatewaySpec, bool) {
	gw, ok := findObject(s.Gateways, p.ns, p.ref.Name)
	if !ok {
		a.why = append(a.why, fmt.Sprintf("Gateway %s does not exist", p.gateway()))
		return gatewaySpec{}, false
	}
	class, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName")
	gc, ok := findObject(s.GatewayClasses, "", class)
	controller, _, _ := unstructured.NestedString(gc.Object, "spec", "controllerName")
	if !ok || controller != TraefikGatewayController {
		a.why = append(a.why, fmt.Sprintf("its Gateway %s is of class %q (controller %q), not Traefik's", p.gateway(), class, controller))
		return gatewaySpec{}, false
	}
	if accepted, msg := routeAccepted(p.route, p.ref, p.ns); accepted == "False" {
		a.why = append(a.why, fmt.Sprintf("Traefik reports it not Accepted by Gateway %s: %s", p.gateway(), msg))
		return gatewaySpec{}, false
	}
	if !s.Traefik.Gateway {
		if s.Traefik.Found && len(s.Traefik.Unsure) == 0 {
			a.why = append(a.why, "the proxy's Traefik does not run the kubernetesGateway provider ("+s.Traefik.Source+")")
			return gatewaySpec{}, false
		}
		a.unsure = append(a.unsure, "whether the proxy's Traefik runs the kubernetesGateway provider is not known")
	}
	var spec gatewaySpec
	if raw, ok := gw.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			a.why = append(a.why, fmt.Sprintf("Gateway %s does not read: %v", p.gateway(), err))
			return gatewaySpec{}, false
		}
	}
	return spec, true
}

// attachToListener adds the entry point of listener l to a when l takes the route: p names it,
// it allows routes of the route's namespace (or may: a is told), a hostname of the route
// matches it, and an entry point of the proxy serves its port. Else a is told why not.
func (s *builder) attachToListener(p routeParent, gw gatewaySpec, l gatewayListener, a *attachment) {
	if !p.takes(l) {
		return
	}
	if why := s.listenerDetached(gw, l, p.ns); why != "" {
		a.why = append(a.why, fmt.Sprintf("Traefik does not attach listener %s of Gateway %s: %s", l.Name, p.gateway(), why))
		return
	}
	allowed, maybe := s.listenerAllows(l, p.ns, p.route.GetNamespace())
	if !allowed && maybe == "" {
		a.why = append(a.why, fmt.Sprintf("listener %s of Gateway %s does not allow routes from namespace %s", l.Name, p.gateway(), p.route.GetNamespace()))
		return
	}
	if !allowed {
		a.unsure = append(a.unsure, maybe)
	}
	if !hostnamesIntersect(l.Hostname, p.hostnames) {
		a.why = append(a.why, fmt.Sprintf("listener %s of Gateway %s serves %s only", l.Name, p.gateway(), l.Hostname))
		return
	}
	if !s.Traefik.EntryPointsKnown {
		return
	}
	e, ok := s.Traefik.EntryPointForListener(l.Port, l.Protocol)
	if !ok {
		a.why = append(a.why, fmt.Sprintf("listener %s (port %d) of Gateway %s matches no entry point of the proxy", l.Name, l.Port, p.gateway()))
		return
	}
	label := fmt.Sprintf("Gateway %s listener %s (:%d/%s) on entry point %s", p.gateway(), l.Name, l.Port, l.Protocol, e.Name)
	if e.Exposed() {
		label += ", reached by " + strings.Join(e.LAN, ", ")
	} else {
		label += ", which no Service port on the LAN addresses reaches"
	}
	a.listeners = append(a.listeners, label)
	if !slices.ContainsFunc(a.via, func(x EntryPoint) bool { return x.Name == e.Name }) {
		a.via = append(a.via, e)
	}
}

// listenerAllows applies allowedRoutes.namespaces (default Same; Gateway API spec). maybe says
// why it cannot be told (a selector over a namespace whose labels were not read).
func (s *builder) listenerAllows(l gatewayListener, gwNS, routeNS string) (bool, string) {
	if len(l.Allowed.Kinds) > 0 && !slices.ContainsFunc(l.Allowed.Kinds, func(k routeGroupKind) bool { return k.Kind == "HTTPRoute" && k.group() == gatewayAPIGroup }) {
		return false, ""
	}
	switch l.Allowed.Namespaces.From {
	case "All":
		return true, ""
	case "Selector":
		sel, err := metav1.LabelSelectorAsSelector(l.Allowed.Namespaces.Selector)
		if err != nil {
			return false, ""
		}
		for _, n := range s.Namespaces {
			if n.Name == routeNS {
				return sel.Matches(labels.Set(n.Labels)), ""
			}
		}
		return false, fmt.Sprintf("the labels of namespace %s were not read, so a Gateway selecting namespaces may or may not take it", routeNS)
	default:
		return gwNS == routeNS, ""
	}
}

// hostnamesIntersect: a listener without hostname takes every route; else some route hostname
// must match it (a leading "*." matches one or more labels).
func hostnamesIntersect(listener string, route []string) bool {
	if listener == "" || len(route) == 0 {
		return true
	}
	match := func(pattern, host string) bool {
		if p, ok := strings.CutPrefix(pattern, "*."); ok {
			return strings.HasSuffix(host, "."+p)
		}
		return pattern == host
	}
	for _, h := range route {
		if match(listener, h) || match(h, listener) {
			return true
		}
	}
	return false
}

// routeAccepted reads the route's status for a parent as written by Traefik: "True", "False"
// or "" (no status yet), with the condition's message.
func routeAccepted(hr unstructured.Unstructured, ref parentRef, ns string) (string, string) {
	parents, _, _ := unstructured.NestedSlice(hr.Object, "status", "parents")
	for _, p := range parents {
		pm, _ := p.(map[string]any)
		if c, _ := pm["controllerName"].(string); c != TraefikGatewayController {
			continue
		}
		pr, _ := pm["parentRef"].(map[string]any)
		name, _ := pr["name"].(string)
		pns, _ := pr["namespace"].(string)
		section, _ := pr["sectionName"].(string)
		if pns == "" {
			pns = hr.GetNamespace()
		}
		if name != ref.Name || pns != ns || section != ref.SectionName {
			continue
		}
		conds, _ := pm["conditions"].([]any)
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Accepted" {
				st, _ := cm["status"].(string)
				msg, _ := cm["message"].(string)
				if msg == "" {
					msg, _ = cm["reason"].(string)
				}
				return st, msg
			}
		}
	}
	return "", ""
}

func findObject(list []unstructured.Unstructured, ns, name string) (unstructured.Unstructured, bool) {
	for _, o := range list {
		if o.GetName() == name && o.GetNamespace() == ns {
			return o, true
		}
	}
	return unstructured.Unstructured{}, false
}
