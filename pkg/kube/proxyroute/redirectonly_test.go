package proxyroute

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The entry point redirection arguments are read as Traefik's static configuration reads them
// (traefik/traefik v3.7.9 pkg/config/static/entrypoints.go: priority defaults to MaxInt-1).
func TestEntryPointRedirectionsAreRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		to       string
		priority int
		acme     bool
	}{
		{"none", nil, "", 0, false},
		{"default priority", []string{"--entryPoints.web.http.redirections.entryPoint.to=:443"}, ":443", math.MaxInt - 1, false},
		{"explicit priority", []string{"--entrypoints.web.http.redirections.entrypoint.to=websecure", "--entryPoints.web.http.redirections.entryPoint.priority=10"}, "websecure", 10, false},
		{"explicit zero", []string{"--entryPoints.web.http.redirections.entryPoint.to=websecure", "--entryPoints.web.http.redirections.entryPoint.priority=0"}, "websecure", 0, false},
		{"unreadable priority is the lowest", []string{"--entryPoints.web.http.redirections.entryPoint.to=websecure", "--entryPoints.web.http.redirections.entryPoint.priority=high"}, "websecure", math.MinInt, false},
		{"acme bypass", []string{"--entryPoints.web.http.redirections.entryPoint.to=:443", "--entryPoints.web.allowACMEByPass"}, ":443", math.MaxInt - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := corev1.Container{Args: append([]string{"--entryPoints.web.address=:8000/tcp"}, tc.args...)}
			eps, _ := entryPointsOf(traefikArgs(c), c)
			require.Len(t, eps, 1)
			assert.Equal(t, tc.to, eps[0].RedirectTo)
			assert.Equal(t, tc.priority, eps[0].RedirectPriority)
			assert.Equal(t, tc.acme, eps[0].ACMEBypass)
		})
	}
}

// RedirectOnly and ServesNothing say a route reaches no service only when Traefik's own code
// says so; every near miss keeps the route judged as one that may serve.
func TestRedirectOnlyAndServesNothing(t *testing.T) {
	lan := []string{"443/TCP of Service traefik/traefik"}
	redirecting := EntryPoint{Name: "web", Port: 8000, LAN: lan, RedirectTo: ":443", RedirectPriority: math.MaxInt - 1}
	plain := EntryPoint{Name: "web", Port: 8000, LAN: lan}
	secure := EntryPoint{Name: "websecure", Port: 8443, LAN: lan, HTTPTLS: true}
	internal := EntryPoint{Name: "admin", Port: 9000}
	noop := []Backend{{Kind: "TraefikService", Name: "noop@internal"}}
	svc := []Backend{{Kind: "Service", Namespace: "wiki", Name: "wiki"}}
	toHTTPS := MiddlewareRef{Raw: "wiki/to-https", Found: true, RedirectScheme: "https"}
	for _, tc := range []struct {
		name     string
		route    Route
		redirect bool
		nothing  bool
	}{
		{"HTTPRoute RequestRedirect", Route{Redirects: "the rule's RequestRedirect filter (to scheme https)", Backends: svc}, true, false},
		{"entry point redirection outranks a host route", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{redirecting}, Backends: svc}, true, false},
		{"an entry point the LAN does not reach is left aside", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{redirecting, internal}, Backends: svc}, true, false},
		{"a request without Host reaches a route without hosts", Route{Via: []EntryPoint{redirecting}, Backends: svc}, false, false},
		{"a route also on a plain entry point", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{redirecting, secure}, Backends: svc}, false, false},
		{"no user route outranks the default redirection", Route{Hosts: []string{"wiki.example.com"}, Priority: maxUserPriority, Via: []EntryPoint{redirecting}, Backends: svc}, true, false},
		{"a route above a lowered redirection priority", Route{Hosts: []string{"wiki.example.com"}, Priority: 1000,
			Via: []EntryPoint{{Name: "web", LAN: lan, RedirectTo: ":443", RedirectPriority: 100}}, Backends: svc}, false, false},
		{"a low redirection priority and a longer rule", Route{Hosts: []string{"wiki.example.com"}, RuleLength: 40,
			Via: []EntryPoint{{Name: "web", LAN: lan, RedirectTo: ":443", RedirectPriority: 19}}, Backends: svc}, false, false},
		{"a low redirection priority and an unknown rule length", Route{Hosts: []string{"wiki.example.com"},
			Via: []EntryPoint{{Name: "web", LAN: lan, RedirectTo: ":443", RedirectPriority: 19}}, Backends: svc}, false, false},
		{"the ACME challenge path bypasses the redirection", Route{Hosts: []string{"wiki.example.com"},
			Via: []EntryPoint{{Name: "web", LAN: lan, RedirectTo: ":443", RedirectPriority: math.MaxInt - 1, ACMEBypass: true}}, Backends: svc}, false, false},
		{"redirectScheme on plain http", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{plain}, Middlewares: []MiddlewareRef{toHTTPS}, Backends: svc}, true, false},
		{"redirectScheme behind TLS passes https on", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{secure}, Middlewares: []MiddlewareRef{toHTTPS}, Backends: svc}, false, false},
		{"noop@internal only", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{plain}, Backends: noop}, false, true},
		{"noop@internal and a Service", Route{Hosts: []string{"wiki.example.com"}, Via: []EntryPoint{plain}, Backends: append(append([]Backend{}, noop...), svc...)}, false, false},
		{"a Service named noop@internal is not Traefik's", Route{Via: []EntryPoint{plain}, Backends: []Backend{{Kind: "Service", Name: "noop@internal"}}}, false, false},
		{"no backend at all", Route{Via: []EntryPoint{plain}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.redirect, tc.route.RedirectOnly() != "", tc.route.RedirectOnly())
			assert.Equal(t, tc.nothing, tc.route.ServesNothing())
		})
	}
}

// Every RequestRedirect filter makes the rule redirect-only, wherever it sits among the filters;
// other filters do not.
func TestRequestRedirectFilters(t *testing.T) {
	https, host := "https", "wiki.example.org"
	port := int32(8443)
	type rr = requestRedirectFilter
	assert.Empty(t, requestRedirect(nil))
	assert.Empty(t, requestRedirect([]routeFilter{{Type: "RequestHeaderModifier"}, {Type: "RequestRedirect"}}), "a RequestRedirect type without its field is invalid: the API refuses it")
	assert.Equal(t, "the rule's RequestRedirect filter (to the request's own URL)", requestRedirect([]routeFilter{{Type: "RequestRedirect", RequestRedirect: &rr{}}}))
	assert.Equal(t, "the rule's RequestRedirect filter (to scheme https, host wiki.example.org, port 8443)",
		requestRedirect([]routeFilter{{Type: "RequestHeaderModifier"}, {Type: "RequestRedirect", RequestRedirect: &rr{Scheme: &https, Hostname: &host, Port: &port}}}))
}

// Traefik builds no router whose priority is above MaxInt-1000 (pkg/server/router/router.go):
// the route is refused, as the lab's Traefik shows.
func TestRoutesAboveTheMaximumUserPriorityAreRefused(t *testing.T) {
	for _, p := range []int{maxUserPriority + 1, math.MaxInt} {
		r := Route{Served: true, Priority: p}
		refuseOverPriority(&r)
		assert.False(t, r.Served)
		assert.True(t, r.Refused)
		assert.Contains(t, r.NotServed, "exceeds Traefik's maximum")
	}
	r := Route{Served: true, Priority: maxUserPriority}
	refuseOverPriority(&r)
	assert.True(t, r.Served)
}

// The bound is at least the rule Traefik writes for the lab's Ingress (`Host("...") &&
// PathPrefix("/")`), and no more than a small margin above it.
func TestIngressRuleLengthBoundsTraefiksRule(t *testing.T) {
	prefix := networkingv1.PathTypePrefix
	ing := networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web-only.apps.example.com",
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix}}}}}}}}
	traefik := len("Host(\"web-only.apps.example.com\") && PathPrefix(\"/\")")
	got := ingressRuleLength(ing)
	assert.GreaterOrEqual(t, got, traefik)
	assert.Less(t, got, 100, "under the lab test's redirection priority")
	assert.Equal(t, len(`PathPrefix("/")`), ingressRuleLength(networkingv1.Ingress{}))
}
