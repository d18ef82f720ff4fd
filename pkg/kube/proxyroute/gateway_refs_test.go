package proxyroute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func grantObject(ns, fromKind, fromNS, toKind string, toName any) unstructured.Unstructured {
	to := map[string]any{"group": "", "kind": toKind}
	if toName != nil {
		to["name"] = toName
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
		"metadata": map[string]any{"namespace": ns, "name": "grant"},
		"spec": map[string]any{
			"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": fromKind, "namespace": fromNS}},
			"to":   []any{to},
		},
	}}
}

func withRule(hr unstructured.Unstructured, rule map[string]any) unstructured.Unstructured {
	hr.Object["spec"].(map[string]any)["rules"] = []any{rule}
	return hr
}

// A rule whose backendRefs are all in other namespaces without a ReferenceGrant is answered 500
// by Traefik (the lab's gw-xns-backend); a grant there, for the route's namespace, lets it serve.
func TestHTTPRouteBackendsOfAnotherNamespaceNeedAReferenceGrant(t *testing.T) {
	hr := withRule(httpRoute("wiki", "wiki"), map[string]any{"backendRefs": []any{map[string]any{"name": "authelia", "namespace": "auth", "port": int64(9091)}}})
	for _, tc := range []struct {
		name   string
		grants []unstructured.Unstructured
		served bool
	}{
		{name: "no grant"},
		{name: "a grant for another namespace", grants: []unstructured.Unstructured{grantObject("auth", "HTTPRoute", "other", "Service", nil)}},
		{name: "a grant for another Service", grants: []unstructured.Unstructured{grantObject("auth", "HTTPRoute", "wiki", "Service", "other")}},
		{name: "a grant from Gateways only", grants: []unstructured.Unstructured{grantObject("auth", "Gateway", "wiki", "Service", nil)}},
		{name: "a grant of the Service", grants: []unstructured.Unstructured{grantObject("auth", "HTTPRoute", "wiki", "Service", "authelia")}, served: true},
		{name: "a grant of every Service", grants: []unstructured.Unstructured{grantObject("auth", "HTTPRoute", "wiki", "Service", nil)}, served: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gatewaySetup(TraefikGatewayController, webListenerFromAll, hr)
			s.ReferenceGrants = tc.grants
			s.DeriveModels("")
			r := routeNamed(t, s, "wiki")
			if tc.served {
				assert.True(t, r.Served, r.NotServed)
				assert.False(t, r.Refused)
				return
			}
			assert.True(t, r.Refused)
			assert.Equal(t, 500, r.RefusedStatus)
			assert.Contains(t, r.NotServed, "backendRefs auth/authelia are in other namespaces")
			assert.Equal(t, []Backend{{Kind: "Service", Group: "core", Namespace: "auth", Name: "authelia"}}, r.MissingGrants)
			grant := ReferenceGrantFor("wiki", r.MissingGrants)
			s.ReferenceGrants = []unstructured.Unstructured{*grant}
			s.DeriveModels("")
			assert.True(t, routeNamed(t, s, "wiki").Served, "the printed grant lets the route serve")
		})
	}
	// One backend of its own namespace: Traefik serves the rule (the refused one answers 500 for
	// its share of the requests): judged as served.
	both := withRule(httpRoute("wiki", "wiki"), map[string]any{"backendRefs": []any{
		map[string]any{"name": "authelia", "namespace": "auth", "port": int64(9091)}, map[string]any{"name": "wiki", "port": int64(80)}}})
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, both)
	s.DeriveModels("")
	assert.True(t, routeNamed(t, s, "wiki").Served)
	// A RequestRedirect answers before any backend.
	redirect := withRule(httpRoute("wiki", "wiki"), map[string]any{
		"filters":     []any{map[string]any{"type": "RequestRedirect", "requestRedirect": map[string]any{"scheme": "https"}}},
		"backendRefs": []any{map[string]any{"name": "authelia", "namespace": "auth", "port": int64(9091)}}})
	s = gatewaySetup(TraefikGatewayController, webListenerFromAll, redirect)
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.True(t, r.Served)
	assert.NotEmpty(t, r.RedirectOnly())
}

// Filters Traefik's Gateway provider cannot load make it answer the rule with 500.
func TestHTTPRouteFiltersTraefikCannotLoadAnswer500(t *testing.T) {
	ext := func(group string) map[string]any {
		return map[string]any{"type": "ExtensionRef", "extensionRef": map[string]any{"group": group, "kind": "Middleware", "name": "sso"}}
	}
	for _, tc := range []struct {
		name   string
		filter map[string]any
		args   []string
		why    string
	}{
		{name: "Traefik v2's group", filter: ext("traefik.containo.us"), why: `ExtensionRef filter names Middleware "sso" of group "traefik.containo.us"`},
		{name: "an unsupported filter type", filter: map[string]any{"type": "RequestMirror", "requestMirror": map[string]any{"backendRef": map[string]any{"name": "x", "port": int64(80)}}},
			why: "its filter of type RequestMirror is not supported"},
		{name: "no kubernetescrd provider", filter: ext("traefik.io"), args: []string{"--entryPoints.web.address=:8000/tcp", "--providers.kubernetesgateway"},
			why: `ExtensionRef filter names Middleware "sso" of group "traefik.io"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gatewaySetup(TraefikGatewayController, webListenerFromAll, httpRoute("wiki", "wiki", tc.filter))
			if tc.args != nil {
				s.ProxyWorkload.Spec.Template.Spec.Containers[0].Args = tc.args
			}
			s.Middlewares = []unstructured.Unstructured{testMiddleware("wiki", "sso", map[string]any{"forwardAuth": map[string]any{"address": "http://sso/verify"}})}
			s.DeriveModels("")
			r := routeNamed(t, s, "wiki")
			assert.True(t, r.Refused)
			assert.Equal(t, 500, r.RefusedStatus)
			assert.Contains(t, r.NotServed, tc.why)
			assert.Empty(t, r.MissingGrants)
		})
	}
}

// Listeners Traefik does not attach serve no route (kubernetes.go loadGatewayListeners).
func TestGatewayListenersTraefikDoesNotAttach(t *testing.T) {
	https := func(ref map[string]any) map[string]any {
		return map[string]any{"name": "websecure", "port": int64(8443), "protocol": "HTTPS",
			"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}},
			"tls":           map[string]any{"certificateRefs": []any{ref}}}
	}
	secret := func(ns string) map[string]any {
		return map[string]any{"group": "", "kind": "Secret", "name": "apps-tls", "namespace": ns}
	}
	for _, tc := range []struct {
		name     string
		listener map[string]any
		grants   []unstructured.Unstructured
		why      string
	}{
		{name: "a certificate of the Gateway's namespace", listener: https(secret("traefik"))},
		{name: "a certificate of another namespace", listener: https(secret("certs")),
			why: "its certificateRef Secret certs/apps-tls is in another namespace, and no ReferenceGrant there lets Gateways of namespace traefik name it"},
		{name: "a certificate of another namespace, granted", listener: https(secret("certs")),
			grants: []unstructured.Unstructured{grantObject("certs", "Gateway", "traefik", "Secret", "apps-tls")}},
		{name: "HTTPS without TLS", listener: map[string]any{"name": "websecure", "port": int64(8443), "protocol": "HTTPS"},
			why: "a listener of protocol HTTPS needs a TLS configuration"},
		{name: "HTTP with TLS", listener: map[string]any{"name": "web", "port": int64(8000), "protocol": "HTTP", "tls": map[string]any{}},
			why: "a listener of protocol HTTP must have no TLS configuration"},
		{name: "a kind HTTP does not support", listener: map[string]any{"name": "web", "port": int64(8000), "protocol": "HTTP",
			"allowedRoutes": map[string]any{"kinds": []any{map[string]any{"kind": "HTTPRoute"}, map[string]any{"kind": "TCPRoute"}}}},
			why: "its allowedRoutes name kind gateway.networking.k8s.io/TCPRoute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gatewaySetup(TraefikGatewayController, tc.listener, httpRoute("traefik", "wiki"))
			s.ReferenceGrants = tc.grants
			s.DeriveModels("")
			r := routeNamed(t, s, "wiki")
			if tc.why == "" {
				assert.True(t, r.Served, r.NotServed)
				return
			}
			assert.False(t, r.Served)
			assert.False(t, r.Refused, "not attached: no router, 404")
			assert.Contains(t, r.NotServed, tc.why)
		})
	}
}

func TestASecondListenerOfTheSameProtocolPortAndHostnameIsNotAttached(t *testing.T) {
	s := gatewaySetup(TraefikGatewayController, webListenerFromAll, httpRoute("wiki", "wiki"))
	second := map[string]any{"name": "web2", "port": int64(8000), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
	_ = unstructured.SetNestedSlice(s.Gateways[0].Object, []any{webListenerFromAll, second}, "spec", "listeners")
	_ = unstructured.SetNestedSlice(s.HTTPRoutes[0].Object, []any{map[string]any{"name": "gw", "namespace": "traefik", "sectionName": "web2"}}, "spec", "parentRefs")
	s.DeriveModels("")
	r := routeNamed(t, s, "wiki")
	assert.False(t, r.Served)
	assert.Contains(t, r.NotServed, "listener web before it has the same protocol, port and hostname")
}

// paerser enables a section only for "true" (any case), and a disabled section's options are
// ignored.
func TestAProviderSetToAnythingButTrueIsOff(t *testing.T) {
	for _, tc := range []struct {
		args []string
		on   bool
	}{
		{args: []string{"--providers.kubernetesgateway=false"}},
		{args: []string{"--providers.kubernetesgateway=1"}},
		{args: []string{"--providers.kubernetesgateway=false", "--providers.kubernetesgateway.experimentalchannel=true"}},
		{args: []string{"--providers.kubernetesgateway=TRUE"}, on: true},
		{args: []string{"--providers.kubernetesgateway.experimentalchannel=true"}, on: true},
	} {
		s := gatewaySetup(TraefikGatewayController, webListenerFromAll, httpRoute("wiki", "wiki"))
		c := &s.ProxyWorkload.Spec.Template.Spec.Containers[0]
		c.Args = append(append([]string{}, chart41Args...), tc.args...)
		s.DeriveModels("")
		assert.Equal(t, tc.on, s.Traefik.Gateway, "%v", tc.args)
		if !tc.on {
			assert.Contains(t, routeNamed(t, s, "wiki").NotServed, "does not run the kubernetesGateway provider", "%v", tc.args)
		}
	}
}
