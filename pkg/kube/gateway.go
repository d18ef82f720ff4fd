package kube

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
}

type routeGroupKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
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

type routeFilter struct {
	Type         string `json:"type"`
	ExtensionRef *struct {
		Group string `json:"group"`
		Kind  string `json:"kind"`
		Name  string `json:"name"`
	} `json:"extensionRef"`
}

// httpRoutes builds one Route per rule of every HTTPRoute.
func (s *Setup) httpRoutes() []Route {
	var out []Route
	for _, hr := range s.HTTPRoutes {
		var spec httpRouteSpec
		if raw, ok := hr.Object["spec"].(map[string]any); !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec) != nil {
			continue
		}
		via, known, notServed, unsure := s.attachHTTPRoute(hr, spec)
		rules := len(spec.Rules)
		if rules == 0 {
			rules = 1 // the API defaults an HTTPRoute without rules to one matching every path
		}
		for i := 0; i < rules; i++ {
			r := Route{Kind: "HTTPRoute", Namespace: hr.GetNamespace(), Name: hr.GetName(), Index: i,
				Object: Ref("HTTPRoute", hr.GetNamespace(), hr.GetName()), Served: notServed == "", NotServed: notServed, ServedUnsure: unsure,
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
				for _, f := range spec.Rules[i].Filters {
					if f.Type != "ExtensionRef" || f.ExtensionRef == nil || f.ExtensionRef.Kind != "Middleware" || !strings.HasPrefix(f.ExtensionRef.Group, "traefik.") {
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
			out = append(out, r)
		}
	}
	return out
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

// attachHTTPRoute finds the Traefik entry points an HTTPRoute is served on. known is false when
// the proxy's entry points are not known; notServed says why no Traefik listener takes it;
// unsure why that may be so.
func (s *Setup) attachHTTPRoute(hr unstructured.Unstructured, spec httpRouteSpec) (via []EntryPoint, known bool, notServed, unsure string) {
	known = s.Traefik.EntryPointsKnown
	var why, unsures []string
	for _, ref := range spec.ParentRefs {
		if (ref.Group != nil && *ref.Group != GatewayAPIGroup) || (ref.Kind != nil && *ref.Kind != "Gateway") {
			continue
		}
		ns := ref.Namespace
		if ns == "" {
			ns = hr.GetNamespace()
		}
		gw, ok := findObject(s.Gateways, ns, ref.Name)
		if !ok {
			why = append(why, fmt.Sprintf("Gateway %s/%s does not exist", ns, ref.Name))
			continue
		}
		class, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName")
		gc, ok := findObject(s.GatewayClasses, "", class)
		controller, _, _ := unstructured.NestedString(gc.Object, "spec", "controllerName")
		if !ok || controller != TraefikGatewayController {
			why = append(why, fmt.Sprintf("its Gateway %s/%s is of class %q (controller %q), not Traefik's", ns, ref.Name, class, controller))
			continue
		}
		if accepted, msg := routeAccepted(hr, ref, ns); accepted == "False" {
			why = append(why, fmt.Sprintf("Traefik reports it not Accepted by Gateway %s/%s: %s", ns, ref.Name, msg))
			continue
		}
		if !s.Traefik.Gateway {
			if s.Traefik.Found && len(s.Traefik.Unsure) == 0 {
				why = append(why, "the proxy's Traefik does not run the kubernetesGateway provider ("+s.Traefik.Source+")")
				continue
			}
			unsures = append(unsures, "whether the proxy's Traefik runs the kubernetesGateway provider is not known")
		}
		var gws gatewaySpec
		if raw, ok := gw.Object["spec"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &gws); err != nil {
				why = append(why, fmt.Sprintf("Gateway %s/%s does not read: %v", ns, ref.Name, err))
				continue
			}
		}
		for _, l := range gws.Listeners {
			if (ref.SectionName != "" && l.Name != ref.SectionName) || (ref.Port != 0 && l.Port != ref.Port) {
				continue
			}
			if l.Protocol != "HTTP" && l.Protocol != "HTTPS" {
				continue
			}
			if allowed, maybe := s.listenerAllows(l, gw.GetNamespace(), hr.GetNamespace()); !allowed {
				if maybe != "" {
					unsures = append(unsures, maybe)
				} else {
					why = append(why, fmt.Sprintf("listener %s of Gateway %s/%s does not allow routes from namespace %s", l.Name, ns, ref.Name, hr.GetNamespace()))
					continue
				}
			}
			if !hostnamesIntersect(l.Hostname, spec.Hostnames) {
				why = append(why, fmt.Sprintf("listener %s of Gateway %s/%s serves %s only", l.Name, ns, ref.Name, l.Hostname))
				continue
			}
			if !known {
				continue
			}
			e, ok := s.Traefik.EntryPointForListener(l.Port, l.Protocol)
			if !ok {
				why = append(why, fmt.Sprintf("listener %s (port %d) of Gateway %s/%s matches no entry point of the proxy", l.Name, l.Port, ns, ref.Name))
				continue
			}
			if !slices.ContainsFunc(via, func(x EntryPoint) bool { return x.Name == e.Name }) {
				via = append(via, e)
			}
		}
	}
	if len(via) == 0 && known {
		if len(why) == 0 {
			why = append(why, "it names no Gateway listener")
		}
		return nil, known, "not attached to a Traefik listener: " + strings.Join(why, "; "), ""
	}
	return via, known, "", strings.Join(unsures, "; ")
}

// listenerAllows applies allowedRoutes.namespaces (default Same; Gateway API spec). maybe says
// why it cannot be told (a selector over a namespace whose labels were not read).
func (s *Setup) listenerAllows(l gatewayListener, gwNS, routeNS string) (bool, string) {
	if len(l.Allowed.Kinds) > 0 && !slices.ContainsFunc(l.Allowed.Kinds, func(k routeGroupKind) bool { return k.Kind == "HTTPRoute" }) {
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
