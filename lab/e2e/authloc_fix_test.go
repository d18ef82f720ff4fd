//go:build lab

package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
)

// The fix LA401 prints for a Location Traefik resolved against an internal forwardAuth address
// round-trips on the lab: the lab's real Traefik reads Middleware traefik/forward-auth (the one
// the grafana Ingress names) under its own CRD, asks the lab's auth server on the Middleware's
// cluster-name address, and gives the browser what it makes of the auth server's path Location;
// the Middleware patch, pasted as printed, is taken by the API server, Traefik then passes the
// path as written, and LA401 passes. The oracle's cases (testdata/traefik-forwardauth.json) name
// each answer; Traefik itself gives it.

var (
	printedMiddlewarePatch = regexp.MustCompile(`(?m)^kubectl -n (\S+) patch middleware (\S+) --type=merge -p '[^']*'$`)
	middlewaresGVR         = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}
	ingressRoutesGVR       = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
)

func TestDoctorPreserveLocationFixRoundTripsOnTheLab(t *testing.T) {
	start := time.Now()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	createOAuth2ProxyPortal(t, dc)
	base := oracleCase(t, "oauth2-proxy-path")
	mw, err := dc.Resource(middlewaresGVR).Namespace("traefik").Get(context.Background(), "forward-auth", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, base.ForwardAuth, mw.Object["spec"].(map[string]any)["forwardAuth"], "the lab's Middleware is the oracle's case")
	t.Cleanup(func() { // the lab's Middleware as manifests/base has it
		kubectl(t, "-n", "traefik", "patch", "middleware", "forward-auth", "--type=merge", "-p", `{"spec":{"forwardAuth":{"preserveLocationHeader":null}}}`)
	})

	// oauth2-proxy answers an anonymous /oauth2/auth with a path when it does not know its
	// public URL (the oracle's oauth2-proxy cases).
	lab.AnswerForwardAuth(t, probeHost, &fwdauth.Answer{Status: base.Auth.Status, Location: base.Auth.Location})
	waitLocation(t, base.Browser.Location)
	r := doctor(t, "--only", "LA401", "--no-helpers")
	c := r.check(t, "LA401")
	require.Equal(t, "fail", c.Status, "%+v", c.Findings)
	var fix string
	for _, f := range c.Findings {
		if f.Severity == "fail" {
			require.Equal(t, "LA401-LOCATION-INTERNAL", f.Code, "%+v", f)
			assert.Contains(t, f.Message, "Traefik resolves a Location that the auth server writes as a path against that address")
			fix = f.Remediation
		}
	}
	line := printedMiddlewarePatch.FindString(fix)
	require.NotEmpty(t, line, "the fix patches the Middleware: %s", fix)
	assert.Equal(t, []string{"traefik", "forward-auth"}, printedMiddlewarePatch.FindStringSubmatch(line)[1:3])
	assert.NotContains(t, fix, "has no preserveLocationHeader", "the lab's Traefik has the option")
	pasteKubectl(t, line)

	stored, err := dc.Resource(middlewaresGVR).Namespace("traefik").Get(context.Background(), "forward-auth", metav1.GetOptions{})
	require.NoError(t, err)
	keep, found, err := unstructured.NestedBool(stored.Object, "spec", "forwardAuth", "preserveLocationHeader")
	require.NoError(t, err)
	require.True(t, found && keep, "the API server kept preserveLocationHeader under Traefik's CRD: %v", stored.Object["spec"])
	patched := oracleCase(t, "oauth2-proxy-path-patched")
	assert.Equal(t, patched.ForwardAuth, stored.Object["spec"].(map[string]any)["forwardAuth"], "the stored forwardAuth is the oracle's patched case")

	waitLocation(t, patched.Browser.Location) // the real Traefik, on the patched Middleware
	r = doctor(t, "--only", "LA401", "--no-helpers")
	assert.Equal(t, 0, r.Code, r.statuses())
	c = r.check(t, "LA401")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions("info", "Location on grafana.apps.example.com"), "%+v", c.Findings)
	t.Logf("fixed doctor: %s in %s; test %s", r.statuses(), r.Elapsed, time.Since(start))
}

// createOAuth2ProxyPortal creates oauth2-proxy's IngressRoute under /oauth2/ of the probe host
// (oauth2-proxy's Traefik guide): the route that makes a path kept as written reach the auth
// server (the lab's Service auth/oauth2-proxy). It is deleted at cleanup.
func createOAuth2ProxyPortal(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	ir := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"name": "oauth2-proxy", "namespace": "auth"},
		"spec": map[string]any{
			"entryPoints": []any{"websecure"},
			"routes": []any{map[string]any{
				"kind": "Rule", "match": "Host(`" + probeHost + "`) && PathPrefix(`/oauth2/`)",
				"services": []any{map[string]any{"name": "oauth2-proxy", "port": int64(4180)}},
			}},
		},
	}}
	_, err := dc.Resource(ingressRoutesGVR).Namespace("auth").Create(ctx, ir, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dc.Resource(ingressRoutesGVR).Namespace("auth").Delete(context.Background(), "oauth2-proxy", metav1.DeleteOptions{})
	})
}
