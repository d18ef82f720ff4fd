package proxyroute

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What Traefik's Gateway provider refuses of what the API server accepts, each as traefik/traefik
// v3.7.9 pkg/provider/kubernetes/gateway does it (proven on the lab's Traefik: lab/e2e
// traefik_gateway_test.go):
//   - a listener it does not attach (kubernetes.go loadGatewayListeners): its routes are not
//     served on it, and their hosts answer 404;
//   - an HTTPRoute rule whose filters it cannot load (httproute.go loadMiddlewares: an
//     unsupported filter type, an ExtensionRef of a group and kind no provider registered):
//     its router's service is an error answering 500 ("invalid-httproute-filter");
//   - a rule whose backendRefs all name objects of another namespace without a ReferenceGrant
//     (loadService, isReferenceGranted): each is a weighted service answering 500.

// groupCore is how Traefik names the core API group in references ("" in the API).
const groupCore = "core"

// listenerTLS is a Gateway listener's tls (gateway-api apis/v1 GatewayTLSConfig).
type listenerTLS struct {
	Mode            string `json:"mode"`
	CertificateRefs []struct {
		Group     *string `json:"group"`
		Kind      *string `json:"kind"`
		Name      string  `json:"name"`
		Namespace string  `json:"namespace"`
	} `json:"certificateRefs"`
}

// group is the kind's group; the API server defaults it to the Gateway API's.
func (k routeGroupKind) group() string {
	if k.Group == nil {
		return gatewayAPIGroup
	}
	return *k.Group
}

// referenceGrant is the part of a ReferenceGrant Traefik matches (gateway-api apis/v1beta1).
type referenceGrant struct {
	From []grantFrom `json:"from"`
	To   []grantTo   `json:"to"`
}

type grantFrom struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
}

type grantTo struct {
	Group string  `json:"group"`
	Kind  string  `json:"kind"`
	Name  *string `json:"name"`
}

// granted reports whether a ReferenceGrant of namespace toNS lets a fromKind of fromNS name
// toGroup/toKind toName (kubernetes.go isReferenceGranted: same namespace needs none; an empty
// group is "core"; a grant without name covers every object of the kind).
func (s *builder) granted(fromKind, fromNS, toGroup, toKind, toName, toNS string) bool {
	if fromNS == toNS {
		return true
	}
	core := func(g string) string {
		if g == "" {
			return groupCore
		}
		return g
	}
	for _, o := range s.ReferenceGrants {
		if o.GetNamespace() != toNS {
			continue
		}
		var g referenceGrant
		raw, ok := o.Object["spec"].(map[string]any)
		if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &g) != nil {
			continue
		}
		from := slices.ContainsFunc(g.From, func(f grantFrom) bool {
			return core(f.Group) == gatewayAPIGroup && f.Kind == fromKind && f.Namespace == fromNS
		})
		to := slices.ContainsFunc(g.To, func(t grantTo) bool {
			return core(t.Group) == toGroup && t.Kind == toKind && (t.Name == nil || *t.Name == toName)
		})
		if from && to {
			return true
		}
	}
	return false
}

// listenerDetached says why Traefik does not attach listener l of a Gateway of namespace ns ("" when
// it does, as far as the objects read tell: a certificate Secret that does not exist or does
// not parse is only seen in the route's status). The entry point of its port is judged by the
// caller.
func (s *builder) listenerDetached(gw gatewaySpec, l gatewayListener, ns string) string {
	if why := unsupportedKinds(l); why != "" {
		return why
	}
	for _, o := range gw.Listeners {
		if o.Name == l.Name {
			break
		}
		// Traefik keeps the first listener of a protocol, port and hostname that has an entry
		// point and supported kinds; a later one is Conflicted.
		if _, ok := s.Traefik.EntryPointForListener(o.Port, o.Protocol); ok && unsupportedKinds(o) == "" &&
			o.Protocol == l.Protocol && o.Port == l.Port && o.Hostname == l.Hostname {
			return fmt.Sprintf("listener %s before it has the same protocol, port and hostname", o.Name)
		}
	}
	switch {
	case l.Protocol == "HTTP" && l.TLS != nil:
		return "a listener of protocol HTTP must have no TLS configuration"
	case l.Protocol != "HTTPS":
		return ""
	case l.TLS == nil:
		return "a listener of protocol HTTPS needs a TLS configuration"
	case l.TLS.Mode == "Passthrough":
		return "protocol HTTPS is not supported with TLS mode Passthrough"
	case len(l.TLS.CertificateRefs) == 0:
		return "one TLS certificateRef is required in Terminate mode"
	}
	for _, ref := range l.TLS.CertificateRefs {
		if (ref.Kind != nil && *ref.Kind != "Secret") || (ref.Group != nil && *ref.Group != "" && *ref.Group != groupCore) {
			return fmt.Sprintf("its certificateRef %s is not a Secret", ref.Name)
		}
		certNS := ref.Namespace
		if certNS == "" {
			certNS = ns
		}
		if !s.granted("Gateway", ns, groupCore, "Secret", ref.Name, certNS) {
			return fmt.Sprintf("its certificateRef Secret %s/%s is in another namespace, and no ReferenceGrant there lets Gateways of namespace %s name it", certNS, ref.Name, ns)
		}
	}
	return ""
}

// unsupportedKinds says why a listener of protocol HTTP or HTTPS rejects its allowedRoutes'
// kinds (kubernetes.go allowedRouteKinds: any kind it does not support detaches it).
func unsupportedKinds(l gatewayListener) string {
	for _, k := range l.Allowed.Kinds {
		if (k.Kind != "HTTPRoute" && k.Kind != "GRPCRoute") || k.group() != gatewayAPIGroup {
			return fmt.Sprintf("its allowedRoutes name kind %s/%s, which a listener of protocol %s does not support", k.group(), k.Kind, l.Protocol)
		}
	}
	return ""
}

// middlewareFilter reports whether an ExtensionRef of group/kind is a Middleware Traefik's
// Gateway provider loads: exactly traefik.io Middleware (the CRD provider registers it, under
// its v3 group only), and only when the CRD provider runs (or that is not known).
func (s *builder) middlewareFilter(group, kind string) bool {
	if group != "traefik.io" || kind != "Middleware" {
		return false
	}
	return s.Traefik.CRD || !s.Traefik.Found || len(s.Traefik.Unsure) > 0
}

// supportedFilters are the filter types Traefik's loadMiddlewares builds (ExtensionRef aside).
var supportedFilters = []string{"RequestRedirect", "RequestHeaderModifier", "ResponseHeaderModifier", "URLRewrite"}

// refuseFailingRule marks a served rule whose every request Traefik answers with 500: a filter it
// cannot load, or (unless a RequestRedirect answers first) backendRefs that are all refused.
func (s *builder) refuseFailingRule(r *Route, ns string, filters []routeFilter, backends []backendRef) {
	if !r.Served {
		return
	}
	why := ""
	for _, f := range filters {
		switch {
		case slices.Contains(supportedFilters, f.Type):
		case f.Type == "ExtensionRef" && f.ExtensionRef != nil && s.middlewareFilter(f.ExtensionRef.Group, f.ExtensionRef.Kind):
		case f.Type == "ExtensionRef" && f.ExtensionRef != nil:
			why = fmt.Sprintf("its ExtensionRef filter names %s %q of group %q, which Traefik's Gateway provider does not load (only traefik.io Middlewares, with the kubernetescrd provider)",
				f.ExtensionRef.Kind, f.ExtensionRef.Name, f.ExtensionRef.Group)
		default:
			why = fmt.Sprintf("its filter of type %s is not supported by Traefik's Gateway provider", f.Type)
		}
		if why != "" {
			break
		}
	}
	var refused []Backend
	if why == "" && r.Redirects == "" && len(backends) > 0 {
		refused = s.refusedBackends(ns, backends)
		if len(refused) < len(backends) {
			refused = nil
		} else {
			names := make([]string, 0, len(refused))
			for _, b := range refused {
				names = append(names, b.Namespace+"/"+b.Name)
			}
			why = fmt.Sprintf("its backendRefs %s are in other namespaces, and no ReferenceGrant there lets HTTPRoutes of namespace %s name them", strings.Join(names, ", "), ns)
		}
	}
	if why == "" {
		return
	}
	r.Served, r.Refused, r.RefusedStatus = false, true, 500
	r.NotServed = why + ": Traefik answers 500"
	r.MissingGrants = refused
}

// refusedBackends are the backendRefs of a rule that Traefik refuses: another namespace's object
// without a ReferenceGrant, or a cross-provider name ("x@file") with a namespace.
func (s *builder) refusedBackends(ns string, refs []backendRef) []Backend {
	var out []Backend
	for _, ref := range refs {
		if ref.Namespace == "" || ref.Namespace == ns {
			continue
		}
		group, kind := ref.groupKind()
		if strings.Contains(ref.Name, "@") || !s.granted("HTTPRoute", ns, group, kind, ref.Name, ref.Namespace) {
			out = append(out, Backend{Kind: kind, Group: group, Namespace: ref.Namespace, Name: ref.Name})
		}
	}
	return out
}

// ReferenceGrantFor is the ReferenceGrant that lets HTTPRoutes of namespace from name the given
// backends (all of one namespace), as a fix prints it.
func ReferenceGrantFor(from string, backends []Backend) *unstructured.Unstructured {
	if len(backends) == 0 {
		return nil
	}
	var to []any
	for _, b := range backends {
		group := b.Group
		if group == groupCore {
			group = ""
		}
		to = append(to, map[string]any{"group": group, "kind": b.Kind, "name": b.Name})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
		"metadata": map[string]any{"name": "httproutes-from-" + from, "namespace": backends[0].Namespace},
		"spec": map[string]any{
			"from": []any{map[string]any{"group": gatewayAPIGroup, "kind": "HTTPRoute", "namespace": from}},
			"to":   to,
		},
	}}
}
