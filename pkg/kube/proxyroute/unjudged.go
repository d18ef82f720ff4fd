package proxyroute

import (
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// Routes of an implementation the model does not judge (HAProxy, Contour, Envoy Gateway,
// Istio, NGINX Gateway Fabric...): which of them it serves is read where Kubernetes' own API
// says so (the IngressClass spec.controller, the GatewayClass controllerName of a parent
// Gateway), so that the probe host comes from its routes; how it authenticates them is not
// read, and each carries Unjudged, which LA107 names instead of a verdict.

// traefikReasoning reports whether the routes are read with Traefik's semantics: the proxy is
// Traefik, or its pods could not be read at all (then what Traefik would do is all there is,
// and the checks say the entry points are unknown).
func (s *builder) traefikReasoning() bool {
	return s.Implementation.Name == ImplTraefik || (s.Implementation.Name == ImplUnknown && !s.Implementation.PodsRead)
}

// unjudgedWhy is the Unjudged text of the proxy's routes.
func (s *builder) unjudgedWhy() string {
	return "served by " + s.Implementation.String() + ": " + s.Implementation.Unjudged
}

// unjudgedIngressRoute models an Ingress for an implementation whose semantics are not modelled.
func (s *builder) unjudgedIngressRoute(ing networkingv1.Ingress) Route {
	r := Route{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Object: kubeobj.Ref("Ingress", ing.Namespace, ing.Name),
		Served: true, Reviewed: ing.Annotations[ReviewedAnnotation] == "reviewed", Unjudged: s.unjudgedWhy()}
	ctrl := s.Implementation.IngressController
	class := ""
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	switch {
	case class != "":
		found := false
		for _, c := range s.IngressClasses {
			if c.Name == class {
				found = true
				if ctrl == "" || c.Spec.Controller != ctrl {
					r.Served, r.NotServed = false, fmt.Sprintf("its class %s belongs to controller %s, not to the proxy's (%s)", class, c.Spec.Controller, s.Implementation.Name)
				}
			}
		}
		if !found {
			r.Served, r.NotServed = false, fmt.Sprintf("no IngressClass %s exists", class)
		}
	case ctrl == "":
		r.Served, r.NotServed = false, fmt.Sprintf("%s is not known to serve Ingresses", s.Implementation.Name)
	default:
		r.ServedUnsure = fmt.Sprintf("it has no ingressClassName: whether %s serves it (its class annotation, its options) is not modelled", s.Implementation.Name)
	}
	for _, rule := range ing.Spec.Rules {
		r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(rule.Host), "."))
	}
	r.Backends = ingressBackends(ing)
	s.reach(&r, s.implementationEntryPoints(), true)
	return r
}

// unjudgedHTTPRoutes models HTTPRoutes for an implementation whose semantics are not modelled:
// a rule is served when a parentRef names a Gateway whose GatewayClass has the proxy's
// controllerName.
func (s *builder) unjudgedHTTPRoutes() []Route {
	var out []Route
	for _, hr := range s.HTTPRoutes {
		var spec httpRouteSpec
		if raw, ok := hr.Object["spec"].(map[string]any); !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec) != nil {
			continue
		}
		notServed := s.notOurGateway(hr, spec)
		rules := max(len(spec.Rules), 1)
		for i := range rules {
			r := httpRouteRule(hr, spec, i, notServed)
			r.Unjudged = s.unjudgedWhy()
			s.reach(&r, s.implementationEntryPoints(), true)
			out = append(out, r)
		}
	}
	return out
}

// notOurGateway says why no parent Gateway of the route is the proxy's controller's ("" when one is).
func (s *builder) notOurGateway(hr unstructured.Unstructured, spec httpRouteSpec) string {
	ctrl := s.Implementation.GatewayController
	var why []string
	for _, ref := range spec.ParentRefs {
		if (ref.Group != nil && *ref.Group != gatewayAPIGroup) || (ref.Kind != nil && *ref.Kind != "Gateway") {
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
		gc, _ := findObject(s.GatewayClasses, "", class)
		c, _, _ := unstructured.NestedString(gc.Object, "spec", "controllerName")
		if ctrl != "" && c == ctrl {
			return ""
		}
		why = append(why, fmt.Sprintf("its Gateway %s/%s is of class %q (controller %q), not the proxy's (%s)", ns, ref.Name, class, c, s.Implementation.Name))
	}
	if len(why) == 0 {
		return "it names no Gateway"
	}
	return strings.Join(why, "; ")
}

// contourHTTPProxies models Contour's root HTTPProxies (spec.virtualhost.fqdn) as routes: served
// when they have no class or class "contour", the classes a Contour without
// --ingress-class-name serves (projectcontour/contour commit 31c4bb38e0a52cef4d8273dd5641a70e39f1d693
// internal/ingressclass/ingressclass.go matches, DefaultClassName); another class depends on the
// controller's flag, which runs in another Deployment: unsure. Included HTTPProxies (no
// virtualhost) are parts of a root's routes and carry no host of their own.
func (s *builder) contourHTTPProxies() []Route {
	var out []Route
	for _, hp := range s.HTTPProxies {
		fqdn, _, _ := unstructured.NestedString(hp.Object, "spec", "virtualhost", "fqdn")
		if fqdn == "" {
			continue
		}
		r := Route{Kind: "HTTPProxy", Namespace: hp.GetNamespace(), Name: hp.GetName(), Object: kubeobj.Ref("HTTPProxy", hp.GetNamespace(), hp.GetName()),
			Served: true, Reviewed: hp.GetAnnotations()[ReviewedAnnotation] == "reviewed", Unjudged: s.unjudgedWhy(),
			Hosts: []string{strings.TrimSuffix(strings.ToLower(fqdn), ".")}}
		class, _, _ := unstructured.NestedString(hp.Object, "spec", "ingressClassName")
		for _, k := range []string{"projectcontour.io/ingress.class", "kubernetes.io/ingress.class"} {
			if class == "" {
				class = hp.GetAnnotations()[k]
			}
		}
		if class != "" && class != "contour" {
			r.ServedUnsure = fmt.Sprintf("its class %q is served only by a Contour run with --ingress-class-name=%s (the controller's Deployment is not read)", class, class)
		}
		s.reach(&r, s.implementationEntryPoints(), true)
		out = append(out, r)
	}
	return out
}
