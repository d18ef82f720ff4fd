//go:build lab

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// LA107 per route kind, against what the lab's real Traefik answers for each route's host on a
// node address: a route Traefik serves answers from its backend (grafana's pod, where nothing
// listens: 502) or from its forward-auth (302 to the identity provider); a route Traefik refuses
// or disables answers 404. Doctor's verdict on each route must say the same.

type routeCase struct {
	name, host string
	// status is what Traefik answers https://host/ with on a node address; 0 = served by the
	// backend (anything but 404 and the auth redirect).
	status int
	// code is doctor's LA107 finding for the route ("" = none: protected).
	code string
}

func TestLA107AgreesWithTraefikPerRouteKind(t *testing.T) {
	start := time.Now()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	auth := map[string]any{"name": "forward-auth", "namespace": "traefik"}
	createMiddleware(t, dc, "monitoring", "sso", map[string]any{"forwardAuth": map[string]any{
		"address": "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth"}})
	cases := []routeCase{
		{name: "ing-open", host: "ing-open.apps.example.com", code: "LA107-NO-AUTH"},
		{name: "ing-auth", host: "ing-auth.apps.example.com", status: http.StatusFound},
		{name: "ing-missing", host: "ing-missing.apps.example.com", status: http.StatusNotFound, code: "LA107-MIDDLEWARE-MISSING"},
		{name: "ir-open", host: "ir-open.apps.example.com", code: "LA107-NO-AUTH"},
		{name: "ir-auth", host: "ir-auth.apps.example.com", status: http.StatusFound},
		{name: "ir-cross", host: "ir-cross.apps.example.com", status: http.StatusNotFound, code: "LA107-ROUTE-REFUSED"},
		{name: "ir-missing", host: "ir-missing.apps.example.com", status: http.StatusNotFound, code: "LA107-MIDDLEWARE-MISSING"},
	}
	createIngress(t, "monitoring", "ing-open", "ing-open.apps.example.com", "websecure", "")
	createIngress(t, "monitoring", "ing-auth", "ing-auth.apps.example.com", "websecure", "traefik-forward-auth@kubernetescrd")
	createIngress(t, "monitoring", "ing-missing", "ing-missing.apps.example.com", "websecure", "monitoring-nope@kubernetescrd")
	createIngressRoute(t, dc, "monitoring", "ir-open", "ir-open.apps.example.com", nil)
	createIngressRoute(t, dc, "monitoring", "ir-auth", "ir-auth.apps.example.com", []any{map[string]any{"name": "sso"}})
	// Traefik refuses a middleware of another namespace unless allowCrossNamespace (off here).
	createIngressRoute(t, dc, "monitoring", "ir-cross", "ir-cross.apps.example.com", []any{auth})
	createIngressRoute(t, dc, "monitoring", "ir-missing", "ir-missing.apps.example.com", []any{map[string]any{"name": "nope"}})

	for _, c := range cases {
		eventually(t, 20*time.Second, func() error { return traefikAnswers(c) })
	}
	r := doctor(t, "--only", "LA107", "--no-helpers")
	la107 := r.check(t, "LA107")
	for _, c := range cases {
		var codes []string
		for _, f := range la107.Findings {
			if strings.HasSuffix(f.Object, "/"+c.name) {
				codes = append(codes, f.Code)
			}
		}
		if c.code == "" {
			assert.Empty(t, codes, "%s: Traefik protects it: %+v", c.name, la107.Findings)
		} else {
			assert.Equal(t, []string{c.code}, codes, "%s: Traefik answers %d", c.name, c.status)
		}
	}
	t.Logf("LA107 on %d routes agrees with Traefik: %s in %s; test %s", len(cases), la107.Status, r.Elapsed, time.Since(start))
}

// traefikAnswers checks Traefik's answer for the case's host on the first node address.
func traefikAnswers(c routeCase) error {
	resp, err := httpsVia(c.host, proxyAddresses[0], 3*time.Second)
	if err != nil {
		return err
	}
	got := resp.StatusCode
	switch {
	case c.status == 0 && (got == http.StatusNotFound || got == http.StatusFound):
		return fmt.Errorf("%s: Traefik answers %d, want its backend's answer", c.name, got)
	case c.status != 0 && got != c.status:
		return fmt.Errorf("%s: Traefik answers %d, want %d", c.name, got, c.status)
	case got == http.StatusFound && !strings.HasPrefix(resp.Header.Get("Location"), "https://auth.example.com/"):
		return fmt.Errorf("%s: Traefik redirects to %q", c.name, resp.Header.Get("Location"))
	}
	return nil
}

// createIngressRoute creates an IngressRoute on websecure for host to Service grafana (of
// namespace monitoring) with the apps wildcard certificate and the given middlewares; deleted at
// cleanup.
func createIngressRoute(t *testing.T, dc dynamic.Interface, ns, name, host string, middlewares []any) {
	t.Helper()
	route := map[string]any{
		"kind": "Rule", "match": "Host(`" + host + "`)",
		"services": []any{map[string]any{"name": "grafana", "namespace": "monitoring", "port": int64(80)}},
	}
	if middlewares != nil {
		route["middlewares"] = middlewares
	}
	ir := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"entryPoints": []any{"websecure"},
			"routes":      []any{route},
			"tls":         map[string]any{"secretName": "apps-wildcard-tls"},
		},
	}}
	_, err := dc.Resource(ingressRoutesGVR).Namespace(ns).Create(context.Background(), ir, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dc.Resource(ingressRoutesGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// A router whose first middleware is a redirectScheme to https, on the plain web entry point,
// answers every request with the redirect: doctor says it only redirects. A redirectRegex
// redirects only the URLs its regex matches (traefik v3.7.9 pkg/middlewares/redirect
// redirect.go: others go on to the service), which doctor does not evaluate: it keeps warning.
func TestLA107RedirectOnlyRoutersAgreeWithTraefik(t *testing.T) {
	start := time.Now()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	createMiddleware(t, dc, "monitoring", "to-https", map[string]any{"redirectScheme": map[string]any{"scheme": "https", "permanent": true}})
	createMiddleware(t, dc, "monitoring", "regex-https", map[string]any{"redirectRegex": map[string]any{
		"regex": "^http://([^/]*)/(.*)", "replacement": "https://${1}/${2}", "permanent": true}})
	createIngress(t, "monitoring", "redir-scheme", "redir-scheme.apps.example.com", "web", "monitoring-to-https@kubernetescrd")
	createIngress(t, "monitoring", "redir-regex", "redir-regex.apps.example.com", "web", "monitoring-regex-https@kubernetescrd")
	for _, host := range []string{"redir-scheme.apps.example.com", "redir-regex.apps.example.com"} {
		eventually(t, 20*time.Second, func() error {
			status, loc, err := httpVia(host, proxyAddresses[0], "/x?y=1")
			if err != nil {
				return err
			}
			if status != http.StatusMovedPermanently || loc != "https://"+host+"/x?y=1" {
				return fmt.Errorf("http://%s/x?y=1: Traefik answers %d %q, want 301 to https", host, status, loc)
			}
			return nil
		})
	}
	r := doctor(t, "--only", "LA107", "--no-helpers")
	c := r.check(t, "LA107")
	codes := map[string]string{}
	for _, f := range c.Findings {
		codes[f.Object] = f.Code
	}
	assert.Equal(t, "LA107-REDIRECT-ONLY", codes["Ingress monitoring/redir-scheme"], "%+v", c.Findings)
	assert.Equal(t, "LA107-NO-AUTH", codes["Ingress monitoring/redir-regex"], "doctor does not evaluate the regex: %+v", c.Findings)
	t.Logf("redirect-only routers: LA107 %s in %s; test %s", c.Status, r.Elapsed, time.Since(start))
}

// httpVia does curl --resolve on port 80: Host = host, TCP to ip:80, no redirect followed.
func httpVia(host, ip, path string) (int, string, error) {
	client := &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ip, "80"))
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get("http://" + host + path)
	if err != nil {
		return 0, "", err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), nil
}
