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
	createRoute(t, dc, ns, name, map[string]any{
		"entryPoints": []any{"websecure"},
		"routes":      []any{route},
		"tls":         map[string]any{"secretName": "apps-wildcard-tls"},
	})
}

// A router whose first middleware is a redirectScheme to https, on the plain web entry point,
// answers every request with the redirect: doctor says it only redirects. A redirectRegex
// redirects only the URLs its regex matches (traefik v3.7.9 pkg/middlewares/redirect
// redirect.go: others go on to the service), which doctor does not evaluate: it keeps warning,
// and rightly: the regex sees the Host as the client wrote it (redirect_regex.go rawURL uses
// req.Host) while the router's Host matcher drops the port (requestdecorator parseHost), so
// "Host: NAME:80" passes a regex written for NAME to the service. A route whose only service is
// noop@internal serves nothing (418) whatever its middlewares let through.
func TestLA107RedirectOnlyRoutersAgreeWithTraefik(t *testing.T) {
	start := time.Now()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	createMiddleware(t, dc, "monitoring", "to-https", map[string]any{"redirectScheme": map[string]any{"scheme": "https", "permanent": true}})
	createMiddleware(t, dc, "monitoring", "regex-https", map[string]any{"redirectRegex": map[string]any{
		"regex": "^http://([^/:]*)/(.*)", "replacement": "https://${1}/${2}", "permanent": true}})
	createIngress(t, "monitoring", "redir-scheme", "redir-scheme.apps.example.com", "web", "monitoring-to-https@kubernetescrd")
	createIngress(t, "monitoring", "redir-regex", "redir-regex.apps.example.com", "web", "monitoring-regex-https@kubernetescrd")
	createRoute(t, dc, "monitoring", "redir-noop", map[string]any{"entryPoints": []any{"web"}, "routes": []any{map[string]any{
		"kind": "Rule", "match": "Host(`redir-noop.apps.example.com`)",
		"middlewares": []any{map[string]any{"name": "regex-https"}},
		"services":    []any{map[string]any{"name": "noop@internal", "kind": "TraefikService"}},
	}}})
	for _, host := range []string{"redir-scheme.apps.example.com", "redir-regex.apps.example.com", "redir-noop.apps.example.com"} {
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
	// The same hosts with the port written in Host: the regex misses, the router still matches.
	bypass := map[string]int{}
	for _, host := range []string{"redir-scheme.apps.example.com", "redir-regex.apps.example.com", "redir-noop.apps.example.com"} {
		status, _, err := httpVia(host+":80", proxyAddresses[0], "/x")
		require.NoError(t, err)
		bypass[host] = status
	}
	assert.Equal(t, http.StatusMovedPermanently, bypass["redir-scheme.apps.example.com"], "redirectScheme ignores the Host's form")
	assert.Equal(t, http.StatusBadGateway, bypass["redir-regex.apps.example.com"], "the regex misses NAME:80: grafana's backend (nothing listens) answers")
	assert.Equal(t, http.StatusTeapot, bypass["redir-noop.apps.example.com"], "noop@internal answers 418")

	r, c, codes := la107Codes(t)
	assert.Equal(t, "LA107-REDIRECT-ONLY", codes["Ingress monitoring/redir-scheme"], "%+v", c.Findings)
	assert.Equal(t, "LA107-NO-AUTH", codes["Ingress monitoring/redir-regex"], "doctor does not evaluate the regex: %+v", c.Findings)
	assert.Equal(t, "LA107-SERVES-NOTHING", codes["IngressRoute monitoring/redir-noop"], "%+v", c.Findings)
	t.Logf("redirect-only routers: %v with the port in Host; LA107 %s in %s; test %s", bypass, c.Status, r.Elapsed, time.Since(start))
}

// An entry point with Traefik's redirection (the chart's ports.web.redirections): its router
// (HostRegexp(`^.+$`), priority MaxInt-1 by default) takes every request with a Host before a
// route served on that entry point alone (traefik v3.7.9 pkg/provider/traefik/internal.go
// Provider.redirection). No user router can outrank the default: Traefik refuses a priority
// above MaxInt-1000 (pkg/server/router/router.go maxUserPriority), which this test saw when it
// first tried MaxInt. With the redirection's priority lowered to 100, a route of priority 1000
// is served, and one of the default priority (its rule's length, under 100) is not.
func TestLA107EntryPointRedirectionAgreesWithTraefik(t *testing.T) {
	start := time.Now()
	patchTraefikArgs(t, []string{"--entryPoints.web.http.redirections.entryPoint.to=:443", "--entryPoints.web.http.redirections.entryPoint.priority=100"})
	createIngress(t, "monitoring", "web-only", "web-only.apps.example.com", "web", "")
	createPriorityIngress(t, "web-first", "1000")
	createPriorityIngress(t, "web-max", "9223372036854775807")
	want := map[string]int{"web-only": http.StatusMovedPermanently, "web-first": http.StatusBadGateway, "web-max": http.StatusMovedPermanently}
	eventually(t, 30*time.Second, func() error {
		for name, status := range want {
			got, loc, err := httpVia(name+".apps.example.com", proxyAddresses[0], "/x")
			if err != nil {
				return err
			}
			if got != status {
				return fmt.Errorf("%s: Traefik answers %d %q, want %d", name, got, loc, status)
			}
		}
		return nil
	})
	_, c, codes := la107Codes(t)
	assert.Equal(t, "LA107-REDIRECT-ONLY", codes["Ingress monitoring/web-only"], "%+v", c.Findings)
	assert.Equal(t, "LA107-NO-AUTH", codes["Ingress monitoring/web-first"], "%+v", c.Findings)
	assert.Equal(t, "LA107-ROUTE-REFUSED", codes["Ingress monitoring/web-max"], "%+v", c.Findings)
	t.Logf("entry point redirection at priority 100: %v; LA107 %s; test %s", want, c.Status, time.Since(start))
}

// createPriorityIngress creates an Ingress on web with Traefik's router.priority annotation.
func createPriorityIngress(t *testing.T, name, priority string) {
	t.Helper()
	ctx := context.Background()
	createIngress(t, "monitoring", name, name+".apps.example.com", "web", "")
	ing, err := lab.Client.NetworkingV1().Ingresses("monitoring").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	ing.Annotations["traefik.ingress.kubernetes.io/router.priority"] = priority
	_, err = lab.Client.NetworkingV1().Ingresses("monitoring").Update(ctx, ing, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// patchTraefikArgs adds args to the Traefik container, waits for the new pod, and restores
// the Deployment at cleanup.
func patchTraefikArgs(t *testing.T, args []string) {
	t.Helper()
	patchTraefik(t, func(c *corev1.Container) { c.Args = append(c.Args, args...) }, func(p corev1.Pod) bool {
		got := strings.Join(p.Spec.Containers[0].Args, " ")
		for _, a := range args {
			if !strings.Contains(got, a) {
				return false
			}
		}
		return true
	})
}

// patchTraefik changes the Traefik container with mutate, waits until the only Traefik pod is
// one that applied says has the change, and returns its IP; at cleanup it restores the
// Deployment and waits for a pod without the change.
func patchTraefik(t *testing.T, mutate func(*corev1.Container), applied func(corev1.Pod) bool) string {
	t.Helper()
	ctx := context.Background()
	deploys := lab.Client.AppsV1().Deployments("traefik")
	d, err := deploys.Get(ctx, "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	orig := d.DeepCopy()
	mutate(&d.Spec.Template.Spec.Containers[0])
	_, err = deploys.Update(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		cur, err := deploys.Get(context.Background(), "traefik", metav1.GetOptions{})
		if err == nil {
			cur.Spec.Template.Spec = orig.Spec.Template.Spec
			_, err = deploys.Update(context.Background(), cur, metav1.UpdateOptions{})
		}
		assert.NoError(t, err)
		waitTraefikPod(t, func(p corev1.Pod) error {
			if applied(p) {
				return fmt.Errorf("Traefik pod %s still has the test's change", p.Name)
			}
			return nil
		})
	})
	return waitTraefikPod(t, func(p corev1.Pod) error {
		if !applied(p) {
			return fmt.Errorf("Traefik pod %s has not got the test's change yet", p.Name)
		}
		return nil
	})
}

// createRoute creates IngressRoute ns/name with the given spec; deleted at cleanup.
func createRoute(t *testing.T, dc dynamic.Interface, ns, name string, spec map[string]any) {
	t.Helper()
	createTraefikObject(t, dc, ingressRoutesGVR, "IngressRoute", ns, name, spec)
}

// la107Codes runs doctor's LA107 and maps each finding's object to its code.
func la107Codes(t *testing.T) (result, checkResult, map[string]string) {
	t.Helper()
	r := doctor(t, "--only", "LA107", "--no-helpers")
	c := r.check(t, "LA107")
	codes := map[string]string{}
	for _, f := range c.Findings {
		codes[f.Object] = f.Code
	}
	return r, c, codes
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
	podIP := patchTraefik(t, func(c *corev1.Container) {
		c.Args = append(c.Args, "--entryPoints.traefik.address=:8080/tcp")
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "traefik", ContainerPort: 8080, Protocol: corev1.ProtocolTCP})
	}, func(p corev1.Pod) bool {
		for _, cp := range p.Spec.Containers[0].Ports {
			if cp.ContainerPort == 8080 {
				return true
			}
		}
		return false
	})
	host := "internal.apps.example.com"
	createIngress(t, "monitoring", "internal", host, "traefik", "")
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

// waitTraefikPod waits until the only Traefik pod is Ready and want accepts it, then until
// kube-proxy has programmed it, and returns its IP.
func waitTraefikPod(t *testing.T, want func(corev1.Pod) error) string {
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
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready || p.DeletionTimestamp != nil {
			return fmt.Errorf("Traefik pod %s: ready %v", p.Name, ready)
		}
		if err := want(p); err != nil {
			return err
		}
		ip = p.Status.PodIP
		return nil
	})
	// The new pod is an endpoint once its EndpointSlice is updated and the real kube-proxy has
	// programmed it: until then the node addresses' 443 is rejected (no endpoint).
	lab.WaitProxySynced(t)
	return ip
}
