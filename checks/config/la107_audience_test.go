package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/internal/roundtrip"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func TestAudienceBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la107-")
}

func ingressRouteObject(ns, name, match string, middlewares ...map[string]any) *unstructured.Unstructured {
	route := map[string]any{"kind": "Rule", "match": match, "services": []any{map[string]any{"name": "svc", "port": int64(80)}}}
	if len(middlewares) > 0 {
		mw := make([]any, 0, len(middlewares))
		for _, m := range middlewares {
			mw = append(mw, m)
		}
		route["middlewares"] = mw
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"routes": []any{route}},
	}}
}

func TestAudienceFollowsMiddlewareChains(t *testing.T) {
	chainMW := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": "secured", "namespace": "monitoring"},
		"spec":     map[string]any{"chain": map[string]any{"middlewares": []any{map[string]any{"name": "forward-auth"}}}},
	}}
	env := configEnv(t, nil, addObjects(chainMW, ingressRouteObject("monitoring", "docs", "Host(`docs.apps.example.com`)", map[string]any{"name": "secured"})))
	st, o := runConfigCheck(t, Audience(env))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	for _, r := range env.Setup.Routes {
		if r.Name == "docs" {
			assert.Equal(t, "http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth", r.ForwardAuthAddress(), "the chain's forwardAuth address is the route's")
		}
	}
}

// A route outside the zone is served on the node addresses too: Traefik matches the Host header,
// not the address (LA107-OTHER-HOST); an Ingress of another class is not served at all.
func TestAudienceJudgesRoutesOutsideTheZoneAndIgnoresOtherIngressClasses(t *testing.T) {
	nginx := "nginx"
	other := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "shop"},
		Spec:       networkingv1.IngressSpec{IngressClassName: &nginx, Rules: []networkingv1.IngressRule{{Host: "shop.apps.example.com"}}},
	}
	env := configEnv(t, nil, addObjects(other, ingressRouteObject("web", "public", "Host(`www.example.org`)")))
	st, o := runConfigCheck(t, Audience(env))
	assert.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	outside := configFindings(o, engine.SeverityWarn, "IngressRoute web/public")
	require.Len(t, outside, 1)
	assert.Equal(t, "LA107-OTHER-HOST", outside[0].Code)
	f := configFindings(o, engine.SeverityInfo, "Ingress web/shop")
	require.Len(t, f, 1, "an Ingress of another class in the zone is reported as not checked")
	assert.Equal(t, "LA107-NOT-SERVED", f[0].Code)
	assert.Contains(t, f[0].Message, "no IngressClass nginx of Traefik's controller exists")
}

func TestAudienceRouteWithoutHostAnswersTheZoneToo(t *testing.T) {
	env := configEnv(t, nil, addObjects(ingressRouteObject("web", "catch-all", "PathPrefix(`/`)")))
	_, o := runConfigCheck(t, Audience(env))
	f := configFindings(o, engine.SeverityWarn, "IngressRoute web/catch-all")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "every host (no Host rule)")
}

func TestAudienceWithoutTheMiddlewareCRDJudgesByName(t *testing.T) {
	env := configEnv(t, nil, func(objs []runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok && (u.GetKind() == "Middleware" || u.GetName() == "middlewares.traefik.io") {
				continue
			}
			out = append(out, o)
		}
		return out
	})
	st, o := runConfigCheck(t, Audience(env))
	assert.Equal(t, engine.StatusPass, st, "forward-auth names an authentication middleware: %+v", o.Findings)
}

func TestAudienceFixesRoundTripOnTheCorpus(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		// The refused cross-namespace reference: the middleware is copied into the route's
		// namespace and named there.
		{"traefik-41-cross-namespace-middleware", []string{"namespace: monitoring", `"value":{"name":"forward-auth"}`}},
		// A route without middleware in a namespace without an authentication middleware: a
		// copy of the cluster's, not a cross-namespace reference Traefik would refuse.
		{"traefik-41-route-default-entrypoints", []string{"namespace: demo", `"path":"/spec/routes/0/middlewares"`}},
		// An HTTPRoute: an ExtensionRef filter naming the copied middleware.
		{"traefik-41-gateway-httproute", []string{"namespace: wiki", `"type":"ExtensionRef"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied := roundTrip(t, corpusObjects(t, tc.name), kube.Selection{AllNamespaces: true}, Audience, engine.StatusWarn)
			require.Len(t, applied, 1)
			for _, w := range tc.want {
				assert.Contains(t, applied[0], w)
			}
		})
	}
}

func TestAudienceFixesRoundTripOnTheFixtures(t *testing.T) {
	for _, variant := range []string{"la107-route-without-auth", "la107-ingress-without-auth"} {
		t.Run(variant, func(t *testing.T) {
			objs, err := fixture.Load(configHealthy, configBroken+"/"+variant)
			require.NoError(t, err)
			roundTrip(t, objs, kube.Selection{}, Audience, engine.StatusWarn)
		})
	}
}

func TestAudienceReviewAlternativeRoundTrips(t *testing.T) {
	objs, err := fixture.Load(configHealthy, configBroken+"/la107-route-without-auth")
	require.NoError(t, err)
	c := newCluster(t, objs)
	_, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{})))
	f := configFindings(o, engine.SeverityWarn, "IngressRoute monitoring/wiki")
	require.Len(t, f, 1)
	alts := roundtrip.Alternatives(f[0].Remediation)
	require.Len(t, alts, 2, "a middleware, or the review annotation")
	c.Apply(t, alts[1])
	st, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{})))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	assert.Len(t, configFindings(o, engine.SeverityInfo, "IngressRoute monitoring/wiki"), 1, "reviewed: an information")
}

// A tenant's IngressRoute names a middleware whose name holds a newline and a command: the
// "was not found" comment of LA107's fix printed it as written, so pasting the fix ran the
// second line (issue 23). Every command of the fix is now one the check wrote.
func TestAudienceFixNeverRunsAMiddlewareNameAsACommand(t *testing.T) {
	hostile := "gone\ntouch /tmp/pwned #"
	env := configEnv(t, nil, addObjects(ingressRouteObject("web", "docs", "Host(`docs.apps.example.com`)",
		map[string]any{"name": hostile, "namespace": "other"})))
	_, o := runConfigCheck(t, Audience(env))
	var fixes int
	for _, f := range o.Findings {
		if f.Remediation == "" {
			continue
		}
		fixes++
		assertRunsNoCommand(t, f.Remediation, "touch")
		assert.Contains(t, f.Remediation, `gone\ntouch`, "the name is shown, its newline escaped")
	}
	require.Positive(t, fixes, "the refused route has a fix: %+v", o.Findings)
}

func TestAudienceTellsARedirectOnlyRouteFromAnOpenOne(t *testing.T) {
	redirect := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": "to-https", "namespace": "monitoring"},
		"spec":     map[string]any{"redirectScheme": map[string]any{"scheme": "https", "permanent": true}},
	}}
	plain := ingressRouteObject("monitoring", "plain", "Host(`docs.apps.example.com`)", map[string]any{"name": "to-https"})
	plain.Object["spec"].(map[string]any)["entryPoints"] = []any{"web"}
	secure := ingressRouteObject("monitoring", "secure", "Host(`wiki.apps.example.com`)", map[string]any{"name": "to-https"})
	secure.Object["spec"].(map[string]any)["entryPoints"] = []any{"websecure"}
	secure.Object["spec"].(map[string]any)["tls"] = map[string]any{}
	env := configEnv(t, nil, addObjects(redirect, plain, secure))
	_, o := runConfigCheck(t, Audience(env))
	codes := map[string]string{}
	for _, f := range o.Findings {
		codes[f.Object] = f.Code
	}
	assert.Equal(t, "LA107-REDIRECT-ONLY", codes["IngressRoute monitoring/plain"], "%+v", o.Findings)
	// A router with TLS gets https requests: Traefik's redirectScheme passes them to the service.
	assert.Equal(t, "LA107-NO-AUTH", codes["IngressRoute monitoring/secure"], "%+v", o.Findings)
}

// ingress-nginx serves the zone: its auth-url annotations authenticate, the fix adds the
// cluster's own auth-url/auth-signin to the open Ingress (or to the catch-all), and LA107 then
// passes on the fixed objects.
func TestAudienceIngressNginxFixesRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, object string }{
		{"ingress-nginx-unauthenticated-host", "Ingress wiki/wiki"},
		{"ingress-nginx-catch-all-ingress", "Ingress hello/hello"},
		{"ingress-nginx-ingress-without-class", "Ingress wiki/wiki"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied := roundTrip(t, corpusObjects(t, tc.name), kube.Selection{AllNamespaces: true}, Audience, engine.StatusWarn)
			require.Len(t, applied, 1)
			assert.Contains(t, applied[0], "nginx.ingress.kubernetes.io/auth-url=http://oauth2-proxy")
			assert.NotContains(t, applied[0], "traefik", "a Traefik middleware is no fix for ingress-nginx")
		})
	}
}

// An implementation doctor does not model is named with what was not judged: a WARN, never a
// PASS from Traefik's reasoning.
func TestAudienceNamesAnImplementationItDoesNotModel(t *testing.T) {
	for _, tc := range []struct{ name, impl string }{
		{"haproxy-ingress-unauthenticated-host", "HAProxy Kubernetes Ingress (haproxytech) v3.2.12"},
		{"contour-httpproxy-unauthenticated", "Contour (Envoy) v1.33.6"},
		{"envoy-gateway-securitypolicy-one-route", "Envoy Gateway"},
		{"nginx-gateway-fabric-httproutes", "NGINX Gateway Fabric v2.6.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, corpusObjects(t, tc.name))
			st, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{AllNamespaces: true})))
			assert.Equal(t, engine.StatusWarn, st)
			var codes []string
			for _, f := range o.Findings {
				codes = append(codes, f.Code)
				assert.NotEqual(t, "LA107-NO-AUTH", f.Code, "no verdict from Traefik's reasoning: %s", f.Message)
			}
			require.Contains(t, codes, "LA107-NOT-MODELLED")
			for _, f := range o.Findings {
				if f.Code == "LA107-NOT-MODELLED" {
					assert.Contains(t, f.Message, tc.impl)
					assert.Contains(t, f.Message, "not judged")
				}
			}
		})
	}
}

// The ingress-nginx fix copies another Ingress's auth-url: a value someone else wrote, which
// must stay one quoted word of the printed command, never a command of its own.
func TestAudienceIngressNginxFixNeverRunsAnAnnotationAsACommand(t *testing.T) {
	objs := corpusObjects(t, "ingress-nginx-unauthenticated-host")
	for _, o := range objs {
		if ing, ok := o.(*networkingv1.Ingress); ok && ing.Name == "grafana" {
			ing.Annotations["nginx.ingress.kubernetes.io/auth-url"] = "http://sso/\ntouch /tmp/pwned #"
		}
	}
	c := newCluster(t, objs)
	_, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{AllNamespaces: true})))
	var fixes int
	for _, f := range o.Findings {
		if f.Remediation == "" {
			continue
		}
		fixes++
		assertRunsNoCommand(t, f.Remediation, "touch")
		assert.Contains(t, f.Remediation, "touch /tmp/pwned", "the copied auth-url is shown, quoted")
	}
	require.Positive(t, fixes, "%+v", o.Findings)
}

// assertRunsNoCommand parses a printed fix as the shell would and fails when a statement runs
// the command word (text someone else wrote became a command).
func assertRunsNoCommand(t *testing.T, fix, word string) {
	t.Helper()
	file, err := syntax.NewParser().Parse(strings.NewReader(fix), "fix")
	require.NoError(t, err, fix)
	for _, st := range file.Stmts {
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			continue
		}
		name, err := expand.Literal(nil, call.Args[0])
		require.NoError(t, err)
		assert.NotEqual(t, word, name, "text of the cluster became a command:\n%s", fix)
	}
}

// An HTTPRoute whose only backend is a Service of another namespace without a ReferenceGrant:
// Traefik answers its host with 500 (proven on the lab's Traefik, lab/e2e
// traefik_gateway_test.go gw-xns-backend). LA107 says so, and its fix, the ReferenceGrant,
// applied, makes the route served: judged then as any served route (here without
// authentication).
func TestAudienceHTTPRouteBackendWithoutReferenceGrantRoundTrips(t *testing.T) {
	more, err := fixture.Decode("overlay", []byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: referencegrants.gateway.networking.k8s.io}
spec:
  group: gateway.networking.k8s.io
  scope: Namespaced
  names: {kind: ReferenceGrant, plural: referencegrants, singular: referencegrant, listKind: ReferenceGrantList}
  versions: [{name: v1beta1, served: true, storage: true}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wiki, namespace: wiki}
spec:
  parentRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: traefik-gateway, namespace: traefik}]
  hostnames: [wiki.apps.example.com]
  rules: [{backendRefs: [{group: "", kind: Service, name: wiki, namespace: docs, port: 80}]}]
`))
	require.NoError(t, err)
	objs, err := fixture.Overlay(append(corpusObjects(t, "traefik-41-gateway-httproute"), more...)...)
	require.NoError(t, err)
	c := newCluster(t, objs)
	_, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{AllNamespaces: true})))
	f := configFindings(o, engine.SeverityWarn, "HTTPRoute wiki/wiki")
	require.Len(t, f, 1, "%+v", o.Findings)
	assert.Equal(t, "LA107-ROUTE-REFUSED", f[0].Code)
	assert.Contains(t, f[0].Message, "so wiki.apps.example.com answers 500")
	assert.Contains(t, f[0].Remediation, "kind: ReferenceGrant")
	assert.Contains(t, f[0].Remediation, "namespace: docs")
	c.Apply(t, f[0].Remediation)
	_, o = runConfigCheck(t, Audience(c.env(t, kube.Selection{AllNamespaces: true})))
	f = configFindings(o, engine.SeverityWarn, "HTTPRoute wiki/wiki")
	require.Len(t, f, 1, "%+v", o.Findings)
	assert.Equal(t, "LA107-NO-AUTH", f[0].Code, "the granted route is served")
}
