package kube

import (
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
	return proxySetup(append(chart41Args, "--providers.kubernetesgateway"), func(s *Setup) {
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
