package proxyroute

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func gatewayObjects(controller string, listener map[string]any) (unstructured.Unstructured, unstructured.Unstructured) {
	gc := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": "edge"}, "spec": map[string]any{"controllerName": controller},
	}}
	gw := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"namespace": "traefik", "name": "gw"},
		"spec":     map[string]any{"gatewayClassName": "edge", "listeners": []any{listener}},
	}}
	return gc, gw
}

func httpRoute(ns, name string, filters ...any) unstructured.Unstructured {
	rule := map[string]any{}
	if len(filters) > 0 {
		rule["filters"] = filters
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "gw", "namespace": "traefik"}},
			"hostnames":  []any{"wiki.apps.example.com"},
			"rules":      []any{rule},
		},
	}}
}

func gatewaySetup(controller string, listener map[string]any, routes ...unstructured.Unstructured) *Setup {
	return proxySetup(append(chart41Args, "--providers.kubernetesgateway"), func(s *builder) {
		gc, gw := gatewayObjects(controller, listener)
		s.GatewayClasses, s.Gateways, s.HTTPRoutes = []unstructured.Unstructured{gc}, []unstructured.Unstructured{gw}, routes
		s.Namespaces = []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "wiki", Labels: map[string]string{"team": "docs"}}}}
	})
}

var webListenerFromAll = map[string]any{"name": "web", "port": int64(8000), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}

func TestHTTPRoutesOnATraefikGatewayAreServedOnTheListenersEntryPoint(t *testing.T) {
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, httpRoute("wiki", "wiki"))
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.True(t, r.Served, r.NotServed)
	assert.Equal(t, []string{"web"}, r.EntryPoints, "listener port 8000 is entry point web")
	assert.Equal(t, ReachLAN, r.Reach)
	assert.Equal(t, []string{"wiki.apps.example.com"}, r.Hosts)
	assert.Empty(t, r.Authentication())
	assert.Len(t, r.Listeners, 1)
	assert.Contains(t, r.Listeners[0], "Gateway traefik/gw listener web (:8000/HTTP) on entry point web, reached by 80/TCP of Service traefik/traefik")
}

func TestHTTPRouteExtensionRefMiddlewareAuthenticates(t *testing.T) {
	filter := map[string]any{"type": "ExtensionRef", "extensionRef": map[string]any{"group": "traefik.io", "kind": "Middleware", "name": "sso"}}
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, httpRoute("wiki", "wiki", filter))
	s.Middlewares = []unstructured.Unstructured{testMiddleware("wiki", "sso", map[string]any{"forwardAuth": map[string]any{"address": "http://sso/verify"}})}
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.Equal(t, "forwardAuth (ExtensionRef wiki/sso)", r.Authentication())
	assert.Equal(t, "http://sso/verify", r.ForwardAuthAddress())
	assert.Equal(t, 1, r.RuleFilters)
}

func TestHTTPRoutesOfOtherControllersOrNotAllowedAreNotServed(t *testing.T) {
	s := gatewaySetup("example.net/other", webListenerFromAll, httpRoute("wiki", "wiki"))
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.False(t, r.Served)
	assert.Contains(t, r.NotServed, `controller "example.net/other"`)

	same := map[string]any{"name": "web", "port": int64(8000), "protocol": "HTTP"} // allowedRoutes defaults to Same
	s = gatewaySetup(TraefikGatewayController, same, httpRoute("wiki", "wiki"))
	s.DeriveModels("")
	r = routeNamed(t, s, "wiki")
	assert.False(t, r.Served)
	assert.Contains(t, r.NotServed, "does not allow routes from namespace wiki")

	selector := map[string]any{"name": "web", "port": int64(8000), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{
		"from": "Selector", "selector": map[string]any{"matchLabels": map[string]any{"team": "docs"}}}}}
	s = gatewaySetup(TraefikGatewayController, selector, httpRoute("wiki", "wiki"))
	s.DeriveModels("")
	assert.True(t, routeNamed(t, s, "wiki").Served, "the namespace's labels match the selector")
}

func TestHTTPRouteRefusedByTraefikStatusIsNotServed(t *testing.T) {
	hr := httpRoute("wiki", "wiki")
	hr.Object["status"] = map[string]any{"parents": []any{map[string]any{
		"controllerName": TraefikGatewayController,
		"parentRef":      map[string]any{"name": "gw", "namespace": "traefik"},
		"conditions":     []any{map[string]any{"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners"}},
	}}}
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, hr)
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.False(t, r.Served)
	assert.Contains(t, r.NotServed, "not Accepted by Gateway traefik/gw: NotAllowedByListeners")
}

func TestHTTPRoutesWithoutTheGatewayProviderAreNotServedByTheProxy(t *testing.T) {
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, httpRoute("wiki", "wiki"))
	c := &s.ProxyWorkload.Spec.Template.Spec.Containers[0]
	c.Args = chart41Args
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.False(t, r.Served)
	assert.Contains(t, r.NotServed, "does not run the kubernetesGateway provider")
}

func TestHTTPRouteBackendRefsAreItsBackends(t *testing.T) {
	hr := httpRoute("wiki", "wiki")
	hr.Object["spec"].(map[string]any)["rules"] = []any{map[string]any{"backendRefs": []any{
		map[string]any{"name": "wiki", "port": int64(80)},
		map[string]any{"name": "auth", "namespace": "auth"},
		map[string]any{"name": "bucket", "group": "example.com", "kind": "Bucket"},
	}}}
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, hr)
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.Equal(t, []Backend{{Kind: "Service", Namespace: "wiki", Name: "wiki"}, {Kind: "Service", Namespace: "auth", Name: "auth"}}, r.Backends)
}

// Each way a Gateway parent does not take an HTTPRoute, or may not, is said on the route.
func TestHTTPRouteAttachmentSaysWhyAParentDoesNotTakeIt(t *testing.T) {
	listener := func(changes map[string]any) map[string]any {
		l := map[string]any{"name": "web", "port": int64(8000), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
		maps.Copy(l, changes)
		return l
	}
	for _, tc := range []struct {
		name     string
		listener map[string]any
		change   func(s *Setup, hr *unstructured.Unstructured)
		// notServed: the route is not served, for this reason; else served, unsure for this one ("" none).
		notServed, unsure string
	}{
		{name: "a Gateway that does not exist", listener: webListenerFromAll,
			change: func(_ *Setup, hr *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(hr.Object, []any{map[string]any{"name": "nope", "namespace": "traefik"}}, "spec", "parentRefs")
			},
			notServed: "Gateway traefik/nope does not exist"},
		{name: "a sectionName no listener has", listener: webListenerFromAll,
			change: func(_ *Setup, hr *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(hr.Object, []any{map[string]any{"name": "gw", "namespace": "traefik", "sectionName": "other"}}, "spec", "parentRefs")
			},
			notServed: "it names no Gateway listener"},
		{name: "a listener that does not serve HTTP", listener: listener(map[string]any{"protocol": "TCP"}),
			notServed: "it names no Gateway listener"},
		{name: "a listener of other hostnames", listener: listener(map[string]any{"hostname": "*.other.example.com"}),
			notServed: "listener web of Gateway traefik/gw serves *.other.example.com only"},
		{name: "a listener port no entry point serves", listener: listener(map[string]any{"port": int64(9999)}),
			notServed: "listener web (port 9999) of Gateway traefik/gw matches no entry point of the proxy"},
		{name: "a Gateway whose spec does not read", listener: webListenerFromAll,
			change: func(s *Setup, _ *unstructured.Unstructured) {
				s.Gateways[0].Object["spec"].(map[string]any)["listeners"] = "web"
			},
			notServed: "Gateway traefik/gw does not read"},
		{name: "a selector over a namespace whose labels were not read",
			listener: listener(map[string]any{"allowedRoutes": map[string]any{"namespaces": map[string]any{
				"from": "Selector", "selector": map[string]any{"matchLabels": map[string]any{"team": "docs"}}}}}),
			change: func(s *Setup, _ *unstructured.Unstructured) { s.Namespaces = nil },
			unsure: "the labels of namespace wiki were not read"},
		{name: "a proxy whose Gateway provider is not known", listener: webListenerFromAll,
			change: func(s *Setup, _ *unstructured.Unstructured) {
				s.Traefik.Gateway, s.Traefik.Unsure = false, []string{"a configuration file"}
			},
			unsure: "whether the proxy's Traefik runs the kubernetesGateway provider is not known"},
		{name: "a proxy whose entry points are not known", listener: listener(map[string]any{"port": int64(9999)}),
			change: func(s *Setup, _ *unstructured.Unstructured) { s.Traefik.EntryPointsKnown = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gatewaySetup(TraefikGatewayController, tc.listener, httpRoute("wiki", "wiki"))
			s.DeriveModels("")
			if tc.change != nil {
				tc.change(s, &s.HTTPRoutes[0])
			}
			routes := s.httpRoutes()
			assert.Len(t, routes, 1)
			r := routes[0]
			if tc.notServed != "" {
				assert.False(t, r.Served)
				assert.Contains(t, r.NotServed, tc.notServed)
				return
			}
			assert.True(t, r.Served, r.NotServed)
			if tc.unsure == "" {
				assert.Empty(t, r.ServedUnsure)
			} else {
				assert.Contains(t, r.ServedUnsure, tc.unsure)
			}
		})
	}
}
