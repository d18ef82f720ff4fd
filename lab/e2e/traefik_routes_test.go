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
	corev1 "k8s.io/api/core/v1"
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

// An entry point the Service does not expose: Traefik serves a route on it (on the pod's port
// 8080), but the node addresses' 443 does not reach it; doctor says the route is not on the LAN.
func TestLA107EntrypointTheServiceDoesNotExposeAgreesWithTraefik(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	deploys := lab.Client.AppsV1().Deployments("traefik")
	d, err := deploys.Get(ctx, "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	orig := d.DeepCopy()
	c := &d.Spec.Template.Spec.Containers[0]
	c.Args = append(c.Args, "--entryPoints.traefik.address=:8080/tcp")
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "traefik", ContainerPort: 8080, Protocol: corev1.ProtocolTCP})
	_, err = deploys.Update(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		cur, err := deploys.Get(context.Background(), "traefik", metav1.GetOptions{})
		if err == nil {
			cur.Spec.Template.Spec = orig.Spec.Template.Spec
			_, err = deploys.Update(context.Background(), cur, metav1.UpdateOptions{})
		}
		assert.NoError(t, err)
		waitTraefikRollout(t, 0)
	})
	host := "internal.apps.example.com"
	createIngress(t, "monitoring", "internal", host, "traefik", "")
	podIP := waitTraefikRollout(t, 8080)
	eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := lab.Exec(ctx, "node-2", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "3",
			"-H", "Host: "+host, "http://"+podIP+":8080/")
		if err != nil {
			return err
		}
		if out == "404" || out == "000" {
			return fmt.Errorf("Traefik's entry point traefik on %s:8080 answers %s for %s, want its backend's answer", podIP, out, host)
		}
		return nil
	})
	resp, err := httpsVia(host, proxyAddresses[0], 3*time.Second)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the node addresses' 443 reaches websecure only")

	r := doctor(t, "--only", "LA107", "--no-helpers")
	la107 := r.check(t, "LA107")
	var codes []string
	for _, f := range la107.Findings {
		if f.Object == "Ingress monitoring/internal" {
			codes = append(codes, f.Code)
		}
	}
	assert.Equal(t, []string{"LA107-NOT-ON-LAN"}, codes, "%+v", la107.Findings)
	t.Logf("unexposed entry point: LA107 %s in %s; test %s", la107.Status, r.Elapsed, time.Since(start))
}

// waitTraefikRollout waits until the only Traefik pod is Ready with (port > 0) or without
// (port 0) container port 8080, and returns its IP.
func waitTraefikRollout(t *testing.T, port int32) string {
	t.Helper()
	var ip string
	eventually(t, 90*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := lab.Client.CoreV1().Pods("traefik").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=traefik"})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Traefik pods", len(list.Items))
		}
		p := list.Items[0]
		has := false
		for _, cp := range p.Spec.Containers[0].Ports {
			has = has || cp.ContainerPort == 8080
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if has != (port > 0) || !ready || p.DeletionTimestamp != nil {
			return fmt.Errorf("Traefik pod %s: port 8080 %v, ready %v", p.Name, has, ready)
		}
		ip = p.Status.PodIP
		return nil
	})
	// The new pod is an endpoint once its EndpointSlice is updated and the real kube-proxy has
	// programmed it: until then the node addresses' 443 is rejected (no endpoint).
	lab.WaitProxySynced(t)
	return ip
}
