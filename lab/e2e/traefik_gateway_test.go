//go:build lab

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// LA107 per HTTPRoute kind on Traefik's real Gateway API provider: Traefik run with
// --providers.kubernetesgateway (the chart's providers.kubernetesGateway.enabled) against the
// Gateway API's own CRDs (lab/build.sh gateway-api, the version Traefik's go.mod requires), a
// GatewayClass of Traefik's controller, Gateways whose listeners are on Traefik's entry point
// ports (and some that are not), and HTTPRoutes for the zone's hosts. For each route, what
// Traefik answers on a node address (curl --resolve) and what doctor's LA107 says must agree.

var gatewayGVR = func(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: resource}
}

// gatewayCase is one HTTPRoute: what Traefik answers for its host on a node address, and
// doctor's LA107 code for it ("" = protected, no finding).
type gatewayCase struct {
	name, ns string
	// scheme is how the route is asked on the node address: https (443) or http (80).
	scheme string
	// status is Traefik's answer; 0 = its backend's (grafana, where nothing listens: 502).
	status int
	// location is the redirect's target prefix when status is a redirect.
	location string
	code     string
}

func TestLA107GatewayAPIAgreesWithTraefik(t *testing.T) {
	start := time.Now()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	// The Gateway provider, and an entry point "admin" (:8080) that no port of the proxy's
	// Service targets.
	podIP := patchTraefik(t, func(c *corev1.Container) {
		c.Args = append(c.Args, "--providers.kubernetesgateway", "--entryPoints.admin.address=:8080/tcp")
	}, func(p corev1.Pod) bool {
		return strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--providers.kubernetesgateway")
	})
	restarted := time.Since(start)
	createGateways(t, dc)
	cases := createGatewayRoutes(t, dc)

	// Traefik writes every route's status for its Gateways before it serves the configuration.
	for _, c := range cases {
		if c.name == "gw-otherclass" {
			continue // not Traefik's Gateway: Traefik writes nothing
		}
		assert.NoError(t, settle(60*time.Second, func() error { return traefikRouteStatus(dc, c) }))
	}
	answers := map[string]string{}
	for _, c := range cases {
		assert.NoError(t, settle(30*time.Second, func() error {
			got, err := gatewayAnswer(c)
			answers[c.name] = got
			return err
		}))
	}
	// gw-admin is served, on the pod's 8080 only.
	eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := lab.Exec(ctx, "node-2", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "3",
			"-H", "Host: gw-admin.apps.example.com", "http://"+podIP+":8080/")
		if err != nil {
			return err
		}
		if out != "502" {
			return fmt.Errorf("entry point admin on %s:8080 answers %s for gw-admin, want its backend's 502", podIP, out)
		}
		return nil
	})
	t.Logf("Traefik's answers: %v", answers)

	r := doctor(t, "--only", "LA107", "--no-helpers")
	la107 := r.check(t, "LA107")
	grantFix := assertGatewayVerdicts(t, la107, cases, answers)
	modelWithoutStatus(t, cases)

	// The printed fix of the refused backend (a ReferenceGrant in its namespace), pasted: the
	// API server takes it, Traefik then serves the backend, and doctor judges the route as served.
	require.Contains(t, grantFix, "kind: ReferenceGrant", "%+v", la107.Findings)
	t.Cleanup(func() { kubectl(t, "-n", "auth", "delete", "referencegrants.gateway.networking.k8s.io", "--all") })
	pasteKubectl(t, grantFix)
	eventually(t, 30*time.Second, func() error {
		resp, err := httpsVia("gw-xns-backend.apps.example.com", proxyAddresses[0], 3*time.Second)
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusInternalServerError || resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("gw-xns-backend: Traefik still answers %d with the ReferenceGrant", resp.StatusCode)
		}
		return nil
	})
	_, after, codes := la107Codes(t)
	assert.Equal(t, "LA107-NO-AUTH", codes["HTTPRoute monitoring/gw-xns-backend"], "served, without authentication: %+v", after.Findings)
	t.Logf("LA107 on %d HTTPRoutes agrees with Traefik's Gateway provider: %s in %s; Traefik restarted in %s; test %s",
		len(cases), la107.Status, r.Elapsed, restarted, time.Since(start))
}

// createGateways creates the GatewayClasses (Traefik's and another controller's) and the
// Gateways the routes name.
func createGateways(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	createMiddleware(t, dc, "monitoring", "gw-sso", map[string]any{"forwardAuth": map[string]any{
		"address": "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth"}})
	createGatewayObject(t, dc, "gatewayclasses", "GatewayClass", "", "lab-traefik", map[string]any{
		"controllerName": "traefik.io/gateway-controller"})
	createGatewayObject(t, dc, "gatewayclasses", "GatewayClass", "", "lab-other", map[string]any{
		"controllerName": "example.com/another-controller"})
	tlsRef := func(ns string) map[string]any {
		ref := map[string]any{"kind": "Secret", "group": "", "name": "apps-wildcard-tls"}
		if ns != "" {
			ref["namespace"] = ns
		}
		return map[string]any{"mode": "Terminate", "certificateRefs": []any{ref}}
	}
	createGatewayObject(t, dc, "gateways", "Gateway", "monitoring", "lan", map[string]any{
		"gatewayClassName": "lab-traefik",
		"listeners": []any{
			map[string]any{"name": "web", "protocol": "HTTP", "port": int64(8000)},
			map[string]any{"name": "websecure", "protocol": "HTTPS", "port": int64(8443), "tls": tlsRef("")},
			// Traefik serves it on entry point admin, which the Service does not expose.
			map[string]any{"name": "admin", "protocol": "HTTP", "port": int64(8080)},
			// The Service's port, not an entry point's: Traefik finds no entry point.
			map[string]any{"name": "svcport", "protocol": "HTTP", "port": int64(80)},
		},
	})
	// A Gateway whose certificate is a Secret of another namespace, without a ReferenceGrant.
	createGatewayObject(t, dc, "gateways", "Gateway", "auth", "xns-cert", map[string]any{
		"gatewayClassName": "lab-traefik",
		"listeners": []any{map[string]any{"name": "websecure", "protocol": "HTTPS", "port": int64(8443),
			"tls": tlsRef("monitoring")}},
	})
	createGatewayObject(t, dc, "gateways", "Gateway", "monitoring", "other", map[string]any{
		"gatewayClassName": "lab-other",
		"listeners":        []any{map[string]any{"name": "web", "protocol": "HTTP", "port": int64(8000)}},
	})
}

// createGatewayRoutes creates one HTTPRoute per case, for the case's host.
func createGatewayRoutes(t *testing.T, dc dynamic.Interface) []gatewayCase {
	t.Helper()
	grafana := []any{map[string]any{"name": "grafana", "port": int64(80)}}
	authelia := func(ns string) []any {
		ref := map[string]any{"name": "authelia", "port": int64(9091)}
		if ns != "" {
			ref["namespace"] = ns
		}
		return []any{ref}
	}
	extRef := func(group, name string) []any {
		return []any{map[string]any{"type": "ExtensionRef", "extensionRef": map[string]any{"group": group, "kind": "Middleware", "name": name}}}
	}
	lan := func(section string) map[string]any {
		return map[string]any{"name": "lan", "namespace": "monitoring", "sectionName": section}
	}
	cases := []struct {
		gatewayCase
		parent, rule map[string]any
	}{
		{gatewayCase{name: "gw-auth", status: http.StatusFound, location: "https://auth.example.com/"},
			lan("websecure"), map[string]any{"filters": extRef("traefik.io", "gw-sso"), "backendRefs": grafana}},
		{gatewayCase{name: "gw-open", code: "LA107-NO-AUTH"}, lan("websecure"), map[string]any{"backendRefs": grafana}},
		{gatewayCase{name: "gw-redirect", scheme: "http", status: http.StatusMovedPermanently, location: "https://gw-redirect.apps.example.com/", code: "LA107-REDIRECT-ONLY"},
			lan("web"), map[string]any{"filters": []any{map[string]any{"type": "RequestRedirect",
				"requestRedirect": map[string]any{"scheme": "https", "statusCode": int64(301)}}}}},
		{gatewayCase{name: "gw-missing", status: http.StatusNotFound, code: "LA107-MIDDLEWARE-MISSING"},
			lan("websecure"), map[string]any{"filters": extRef("traefik.io", "gw-nope"), "backendRefs": grafana}},
		{gatewayCase{name: "gw-nosection", status: http.StatusNotFound, code: "LA107-NOT-SERVED"}, lan("nope"), map[string]any{"backendRefs": grafana}},
		{gatewayCase{name: "gw-otherclass", scheme: "http", status: http.StatusNotFound, code: "LA107-NOT-SERVED"},
			map[string]any{"name": "other"}, map[string]any{"backendRefs": grafana}},
		// The listener allows routes of its Gateway's namespace only (allowedRoutes' default).
		{gatewayCase{name: "gw-othernsroute", ns: "auth", status: http.StatusNotFound, code: "LA107-NOT-SERVED"},
			lan("websecure"), map[string]any{"backendRefs": authelia("")}},
		{gatewayCase{name: "gw-admin", scheme: "http", status: http.StatusNotFound, code: "LA107-NOT-ON-LAN"}, lan("admin"), map[string]any{"backendRefs": grafana}},
		{gatewayCase{name: "gw-svcport", scheme: "http", status: http.StatusNotFound, code: "LA107-NOT-SERVED"}, lan("svcport"), map[string]any{"backendRefs": grafana}},
		// A backend of another namespace without a ReferenceGrant.
		{gatewayCase{name: "gw-xns-backend", status: http.StatusInternalServerError, code: "LA107-ROUTE-REFUSED"},
			lan("websecure"), map[string]any{"backendRefs": authelia("auth")}},
		{gatewayCase{name: "gw-xns-cert", ns: "auth", status: http.StatusNotFound, code: "LA107-NOT-SERVED"},
			map[string]any{"name": "xns-cert"}, map[string]any{"backendRefs": authelia("")}},
		// Filters Traefik's provider cannot load: an ExtensionRef of Traefik v2's group, a RequestMirror.
		{gatewayCase{name: "gw-v2group", status: http.StatusInternalServerError, code: "LA107-ROUTE-REFUSED"},
			lan("websecure"), map[string]any{"filters": extRef("traefik.containo.us", "gw-sso"), "backendRefs": grafana}},
		{gatewayCase{name: "gw-mirror", status: http.StatusInternalServerError, code: "LA107-ROUTE-REFUSED"},
			lan("websecure"), map[string]any{"filters": []any{map[string]any{"type": "RequestMirror",
				"requestMirror": map[string]any{"backendRef": map[string]any{"name": "grafana", "port": int64(80)}}}}, "backendRefs": grafana}},
	}
	out := make([]gatewayCase, 0, len(cases))
	for _, c := range cases {
		createGatewayObject(t, dc, "httproutes", "HTTPRoute", c.namespace(), c.name, map[string]any{
			"parentRefs": []any{c.parent},
			"hostnames":  []any{c.name + ".apps.example.com"},
			"rules":      []any{c.rule},
		})
		out = append(out, c.gatewayCase)
	}
	return out
}

// assertGatewayVerdicts compares LA107's finding on each case's route with what Traefik
// answered, and returns the fix printed for gw-xns-backend.
func assertGatewayVerdicts(t *testing.T, la107 checkResult, cases []gatewayCase, answers map[string]string) (grantFix string) {
	t.Helper()
	for _, c := range cases {
		var codes []string
		for _, f := range la107.Findings {
			if f.Object != "HTTPRoute "+c.namespace()+"/"+c.name {
				continue
			}
			codes = append(codes, f.Code)
			t.Logf("%s (Traefik: %s): %s %s", c.name, answers[c.name], f.Code, f.Message)
			switch c.name {
			case "gw-xns-backend":
				grantFix = f.Remediation
			case "gw-open": // which Gateway listener the node addresses' port reaches
				assert.Equal(t, []any{"Gateway monitoring/lan listener websecure (:8443/HTTPS) on entry point websecure, reached by 443/TCP of Service traefik/traefik"},
					f.Evidence["listeners"], "%+v", f.Evidence)
			}
		}
		if c.code == "" {
			assert.Empty(t, codes, "%s: Traefik answers %s: %+v", c.name, answers[c.name], la107.Findings)
		} else {
			assert.Equal(t, []string{c.code}, codes, "%s: Traefik answers %s", c.name, answers[c.name])
		}
	}
	return grantFix
}

// modelWithoutStatus: doctor's route model of the same objects with the routes' status removed
// (Traefik has not written it yet, or another controller wrote it) reaches the same verdicts from
// the specs alone, as Traefik's own code reaches them.
func modelWithoutStatus(t *testing.T, cases []gatewayCase) {
	t.Helper()
	s := discoveredCorefile(t)
	for i := range s.HTTPRoutes {
		unstructured.RemoveNestedField(s.HTTPRoutes[i].Object, "status")
	}
	s.DeriveModels("")
	for _, c := range cases {
		var got *proxyroute.Route
		for i, r := range s.Routes {
			if r.Kind == "HTTPRoute" && r.Namespace == c.namespace() && r.Name == c.name {
				got = &s.Routes[i]
			}
		}
		if !assert.NotNil(t, got, "%s is modelled", c.name) {
			continue
		}
		verdict := "served"
		switch {
		case got.Refused:
			verdict = "LA107-ROUTE-REFUSED"
		case !got.Served:
			verdict = "LA107-NOT-SERVED"
		case got.Reach == proxyroute.ReachNotLAN:
			verdict = "LA107-NOT-ON-LAN"
		}
		want := c.code
		if want == "" || want == "LA107-NO-AUTH" || want == "LA107-REDIRECT-ONLY" || want == "LA107-MIDDLEWARE-MISSING" {
			want = "served"
		}
		assert.Equal(t, want, verdict, "%s without status: %s", c.name, got.NotServed)
		t.Logf("%s without status: %s %s", c.name, verdict, got.NotServed)
	}
}

// settle retries check until it passes or timeout, and returns its last error (a mismatch is
// reported for each case, not only for the first).
func settle(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c gatewayCase) namespace() string {
	if c.ns == "" {
		return "monitoring"
	}
	return c.ns
}

// gatewayAnswer checks what Traefik answers for the case's host on the first node address.
func gatewayAnswer(c gatewayCase) (string, error) {
	host := c.name + ".apps.example.com"
	var status int
	var loc string
	if c.scheme == "http" {
		var err error
		status, loc, err = httpVia(host, proxyAddresses[0], "/")
		if err != nil {
			return "", err
		}
	} else {
		resp, err := httpsVia(host, proxyAddresses[0], 3*time.Second)
		if err != nil {
			return "", err
		}
		status, loc = resp.StatusCode, resp.Header.Get("Location")
	}
	got := fmt.Sprintf("%d %s", status, loc)
	want := c.status
	if want == 0 {
		want = http.StatusBadGateway
	}
	if status != want || (c.location != "" && !strings.HasPrefix(loc, c.location)) {
		return got, fmt.Errorf("%s: Traefik answers %s, want %d %s", c.name, got, want, c.location)
	}
	return got, nil
}

// traefikRouteStatus waits until Traefik's controller has written the route's status.
func traefikRouteStatus(dc dynamic.Interface, c gatewayCase) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hr, err := dc.Resource(gatewayGVR("httproutes")).Namespace(c.namespace()).Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	parents, _, _ := unstructured.NestedSlice(hr.Object, "status", "parents")
	for _, p := range parents {
		if pm, ok := p.(map[string]any); ok && pm["controllerName"] == "traefik.io/gateway-controller" {
			return nil
		}
	}
	return fmt.Errorf("HTTPRoute %s/%s: no status from Traefik yet", c.namespace(), c.name)
}

// createGatewayObject creates a gateway.networking.k8s.io/v1 object (ns "" for a cluster-scoped
// one), validated by the API server against the Gateway API's CRDs; deleted at cleanup.
func createGatewayObject(t *testing.T, dc dynamic.Interface, resource, kind, ns, name string, spec map[string]any) {
	t.Helper()
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec,
	}}
	ri := dc.Resource(gatewayGVR(resource))
	var client dynamic.ResourceInterface = ri
	if ns != "" {
		client = ri.Namespace(ns)
	}
	_, err := client.Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err, "the API server takes the %s under the Gateway API's CRD", kind)
	t.Cleanup(func() {
		_ = client.Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// Without the kubernetescrd provider nothing registers traefik.io Middlewares as ExtensionRef
// filters (traefik v3.7.9 pkg/config/static/static_config.go calls FillExtensionBuilderRegistry
// only when providers.kubernetesCRD is set): Traefik answers the rule with 500, even for a
// forwardAuth Middleware that exists, and LA107 says the route is refused, not protected.
func TestLA107GatewayExtensionRefWithoutTheCRDProviderAgreesWithTraefik(t *testing.T) {
	start := time.Now()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	patchTraefik(t, func(c *corev1.Container) {
		var args []string
		for _, a := range c.Args {
			if a != "--providers.kubernetescrd" {
				args = append(args, a)
			}
		}
		c.Args = append(args, "--providers.kubernetesgateway")
	}, func(p corev1.Pod) bool {
		return strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--providers.kubernetesgateway")
	})
	createGateways(t, dc)
	c := gatewayCase{name: "gw-nocrd", status: http.StatusInternalServerError, code: "LA107-ROUTE-REFUSED"}
	createGatewayObject(t, dc, "httproutes", "HTTPRoute", "monitoring", c.name, map[string]any{
		"parentRefs": []any{map[string]any{"name": "lan", "sectionName": "websecure"}},
		"hostnames":  []any{c.name + ".apps.example.com"},
		"rules": []any{map[string]any{
			"filters":     []any{map[string]any{"type": "ExtensionRef", "extensionRef": map[string]any{"group": "traefik.io", "kind": "Middleware", "name": "gw-sso"}}},
			"backendRefs": []any{map[string]any{"name": "grafana", "port": int64(80)}},
		}},
	})
	eventually(t, 60*time.Second, func() error { return traefikRouteStatus(dc, c) })
	var answer string
	eventually(t, 30*time.Second, func() error {
		var err error
		answer, err = gatewayAnswer(c)
		return err
	})
	_, la107, codes := la107Codes(t)
	assert.Equal(t, c.code, codes["HTTPRoute monitoring/gw-nocrd"], "Traefik answers %s: %+v", answer, la107.Findings)
	t.Logf("ExtensionRef without the CRD provider: Traefik %s, LA107 %s; test %s", answer, codes["HTTPRoute monitoring/gw-nocrd"], time.Since(start))
}
