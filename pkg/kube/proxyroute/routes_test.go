package proxyroute

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

func testIngressRoute(ns, name, match string, middlewares ...string) unstructured.Unstructured {
	route := map[string]any{"match": match}
	if len(middlewares) > 0 {
		mws := make([]any, 0, len(middlewares))
		for _, m := range middlewares {
			mws = append(mws, map[string]any{"name": m})
		}
		route["middlewares"] = mws
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"routes": []any{route}},
	}}
}

func testMiddleware(ns, name string, spec map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec,
	}}
}

func testIngress(ns, name, host string, class *string, annotations map[string]string) networkingv1.Ingress {
	return networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       networkingv1.IngressSpec{IngressClassName: class, Rules: []networkingv1.IngressRule{{Host: host}}},
	}
}

// routeSetup is a setup whose Middleware CRD is installed, with one forward-auth middleware
// in every namespace the routes use and one that only adds headers.
func routeSetup(routes []unstructured.Unstructured, ingresses []networkingv1.Ingress, classes ...networkingv1.IngressClass) *Setup {
	s := &Setup{Objects: Objects{Zone: zone.MustParse("apps.example.com"), IngressRoutes: routes, Ingresses: ingresses, IngressClasses: classes,
		MiddlewaresInstalled: true}}
	for _, ns := range []string{"m", "monitoring", "docs", "a", "web"} {
		s.Middlewares = append(s.Middlewares,
			testMiddleware(ns, "forward-auth", map[string]any{"forwardAuth": map[string]any{"address": "http://sso/verify"}}),
			testMiddleware(ns, "headers", map[string]any{"headers": map[string]any{}}))
	}
	return s
}

func TestChooseProbeHost(t *testing.T) {
	traefik, nginx := "traefik", "nginx"
	classes := []networkingv1.IngressClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "traefik"}, Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}},
	}
	tests := []struct {
		name       string
		flag       string
		routes     []unstructured.Unstructured
		ingresses  []networkingv1.Ingress
		wantHost   string
		wantSource string
	}{
		{
			name: "--host wins over the routes", flag: "Wiki.Apps.Example.com.",
			routes:   []unstructured.Unstructured{testIngressRoute("m", "grafana", "Host(`grafana.apps.example.com`)", "forward-auth")},
			wantHost: "wiki.apps.example.com", wantSource: "--host",
		},
		{
			name: "a route with an authentication middleware is preferred: it is the one that answers 302",
			routes: []unstructured.Unstructured{
				testIngressRoute("docs", "docs", "Host(`docs.apps.example.com`)", "headers"),
				testIngressRoute("monitoring", "grafana", "Host(`grafana.apps.example.com`) && PathPrefix(`/`)", "forward-auth"),
			},
			wantHost: "grafana.apps.example.com", wantSource: "IngressRoute monitoring/grafana (a route with an authentication middleware)",
		},
		{
			name:     "Traefik v2's several hosts in one Host() are all candidates, the first by name wins",
			routes:   []unstructured.Unstructured{testIngressRoute("a", "multi", "Host(`zz.apps.example.com`, `aa.apps.example.com`)")},
			wantHost: "aa.apps.example.com", wantSource: "IngressRoute a/multi",
		},
		{
			name:      "an Ingress of Traefik's class with a middleware annotation is a candidate",
			ingresses: []networkingv1.Ingress{testIngress("web", "app", "app.apps.example.com", &traefik, map[string]string{TraefikMiddlewaresAnnotation: "web-forward-auth@kubernetescrd"})},
			wantHost:  "app.apps.example.com", wantSource: "Ingress web/app (a route with an authentication middleware)",
		},
		{
			// Regression (issue 12): the probe host was taken from an Ingress of another class,
			// which the proxy does not serve: LA401 then judged a route Traefik never answers.
			name: "an Ingress of another class is never the probe host",
			ingresses: []networkingv1.Ingress{
				testIngress("web", "shop", "aaa.apps.example.com", &nginx, map[string]string{TraefikMiddlewaresAnnotation: "web-forward-auth@kubernetescrd"}),
				testIngress("web", "wiki", "wiki.apps.example.com", &traefik, nil),
			},
			wantHost: "wiki.apps.example.com", wantSource: "Ingress web/wiki",
		},
		{
			name: "hosts outside the zone, wildcards and HostRegexp are not candidates",
			routes: []unstructured.Unstructured{
				testIngressRoute("a", "out", "Host(`grafana.example.net`)", "forward-auth"),
				testIngressRoute("a", "re", "HostRegexp(`^.+\\.apps\\.example\\.com$`)", "forward-auth"),
			},
			ingresses: []networkingv1.Ingress{testIngress("a", "wild", "*.apps.example.com", &traefik, nil)},
			wantHost:  "apps.example.com", wantSource: "zone apex (no route of the proxy for the zone was found; name one with --host)",
		},
		{
			// A route's Host() is free text someone else wrote: the probe host goes into DNS
			// questions, URLs and printed commands, so only a host name is a candidate.
			name: "a host that is not a host name is never the probe host",
			routes: []unstructured.Unstructured{
				testIngressRoute("a", "evil", "Host(`x\n rm -rf ~ #.apps.example.com`)", "forward-auth"),
				testIngressRoute("a", "space", "Host(`a b.apps.example.com`)", "forward-auth"),
				testIngressRoute("a", "ok", "Host(`zz.apps.example.com`)"),
			},
			wantHost: "zz.apps.example.com", wantSource: "IngressRoute a/ok",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := routeSetup(tc.routes, tc.ingresses, classes...)
			s.DeriveModels(tc.flag)
			assert.Equal(t, tc.wantHost, s.ProbeHost.Name)
			assert.Equal(t, tc.wantSource, s.ProbeHost.Source)
		})
	}
}

func TestRoutesResolveMiddlewaresOnceForEveryReader(t *testing.T) {
	chain := testMiddleware("web", "secured", map[string]any{"chain": map[string]any{"middlewares": []any{map[string]any{"name": "forward-auth"}}}})
	s := routeSetup([]unstructured.Unstructured{
		testIngressRoute("web", "docs", "HostSNI(`docs.apps.example.com`)", "secured"),
		testIngressRoute("web", "gone", "Host(`gone.apps.example.com`)", "missing"),
	}, nil)
	s.Middlewares = append(s.Middlewares, chain)
	s.DeriveModels("")
	require.Len(t, s.Routes, 2)
	assert.Equal(t, []string{"docs.apps.example.com"}, s.Routes[0].Hosts, "HostSNI is read like Host")
	assert.Equal(t, "chain secured > forwardAuth (web/secured)", s.Routes[0].Authentication())
	assert.False(t, s.Routes[1].Middlewares[0].Found)
	assert.True(t, s.MiddlewaresKnown)
	assert.Equal(t, "a/forward-auth", s.AuthMiddleware)
}

func TestRoutesReadTheirBackendsAndTheirForwardAuthOptions(t *testing.T) {
	traefik := "traefik"
	ir := testIngressRoute("web", "multi", "Host(`m.apps.example.com`)", "secured")
	ir.Object["spec"].(map[string]any)["routes"].([]any)[0].(map[string]any)["services"] = []any{
		map[string]any{"name": "a", "port": int64(80)},
		map[string]any{"name": "wrr", "kind": "TraefikService"},
		map[string]any{"name": "b@file"},
	}
	ing := testIngress("web", "app", "app.apps.example.com", &traefik, nil)
	ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "fallback"}}
	ing.Spec.Rules[0].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
		{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app"}}},
		{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app"}}},
	}}
	s := routeSetup([]unstructured.Unstructured{ir}, []networkingv1.Ingress{ing})
	s.Middlewares = append(s.Middlewares,
		testMiddleware("web", "secured", map[string]any{"chain": map[string]any{"middlewares": []any{map[string]any{"name": "sso"}}}}),
		testMiddleware("web", "sso", map[string]any{"forwardAuth": map[string]any{
			"address": "http://authelia.auth:9091/api/verify", "preserveLocationHeader": true, "authSigninURL": "/login"}}))
	s.DeriveModels("")

	multi := routeNamed(t, s, "multi")
	assert.Equal(t, []Backend{{Kind: "Service", Namespace: "web", Name: "a"}, {Kind: "TraefikService", Namespace: "web", Name: "wrr"},
		{Kind: "Service", Name: "b@file"}}, multi.Backends)
	assert.Equal(t, &ForwardAuth{Middleware: "web/sso", Address: "http://authelia.auth:9091/api/verify", PreserveLocationHeader: true, AuthSigninURL: "/login"},
		multi.ForwardAuth(), "the chain's member holds the forwardAuth and its options")
	assert.Equal(t, "http://authelia.auth:9091/api/verify", multi.ForwardAuthAddress())

	app := routeNamed(t, s, "app")
	assert.Equal(t, []Backend{{Kind: "Service", Namespace: "web", Name: "fallback"}, {Kind: "Service", Namespace: "web", Name: "app"}}, app.Backends)
	assert.Nil(t, app.ForwardAuth())
}

// A tenant's Middleware whose chain names itself 200 times: the walk reads each middleware once
// per depth, however many routes name it (before the memo it read 200^3 members per route,
// 7-12 s for one route, minutes for a hundred; issue 23).
func TestASelfReferencingChainIsReadOncePerDepth(t *testing.T) {
	members := make([]any, 200)
	for i := range members {
		members[i] = map[string]any{"name": "loop"}
	}
	loop := testMiddleware("tenant", "loop", map[string]any{"chain": map[string]any{"middlewares": members}})
	routes := make([]unstructured.Unstructured, 100)
	for i := range routes {
		routes[i] = testIngressRoute("tenant", fmt.Sprintf("r%d", i), fmt.Sprintf("Host(`r%d.apps.example.com`)", i), "loop")
	}
	s := routeSetup(routes, nil)
	s.Middlewares = append(s.Middlewares, loop)
	idx := newMiddlewareIndex(s)
	for i := range routes {
		ref := MiddlewareRef{Namespace: "tenant", Name: "loop", Raw: routes[i].GetName()}
		idx.resolve(&ref)
		require.True(t, ref.Found)
		assert.Empty(t, ref.Auth, "a chain of itself authenticates nothing")
	}
	assert.LessOrEqual(t, *idx.evaluations, (chainDepth+1)*len(s.Middlewares),
		"each middleware is read at most once per depth")
	s.DeriveModels("")
	require.Len(t, s.Routes, len(routes))
}

// The Ingress annotation form "namespace-name@kubernetescrd" resolves through one index, and
// when two Middlewares share that name the answer does not depend on map order.
func TestAnnotationMiddlewareIDsResolveDeterministically(t *testing.T) {
	s := routeSetup(nil, nil)
	s.Middlewares = append(s.Middlewares,
		testMiddleware("a-b", "c", map[string]any{"basicAuth": map[string]any{}}),
		testMiddleware("a", "b-c", map[string]any{"headers": map[string]any{}}))
	for range 20 {
		idx := newMiddlewareIndex(s)
		ref := MiddlewareRef{Raw: "a-b-c@kubernetescrd"}
		idx.resolve(&ref)
		require.True(t, ref.Found)
		assert.Equal(t, "a-b", ref.Namespace, `the first key in sorted order ("a-b/c" < "a/b-c")`)
	}
}
