//go:build lab

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/internal/traefikoracle"
)

// The fix LA401 prints for a Location Traefik resolved against an internal forwardAuth address
// round-trips on the lab: the Middleware patch, pasted as printed, is taken by the real API
// server under Traefik's own Middleware CRD (of the Traefik version the oracle runs), which
// keeps the field; the lab's proxy then answers what Traefik gives the browser for the stored
// Middleware (the oracle's proven case, looked up from the object the API server returns), and
// LA401 passes. The lab's nginx does not read Middlewares: each answer it gives is the oracle's
// for the Middleware as the API server holds it.

var (
	printedMiddlewarePatch = regexp.MustCompile(`(?m)^kubectl -n (\S+) patch middleware (\S+) --type=merge -p '[^']*'$`)
	middlewaresGVR         = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}
	ingressRoutesGVR       = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
)

// oauth2-proxy answers an anonymous /oauth2/auth with a path when it does not know its public
// URL (the oracle's oauth2-proxy cases).
var oauth2ProxyAnswer = traefikoracle.Answer{Status: http.StatusFound, Location: "/oauth2/start?rd=%2F"}

func TestDoctorPreserveLocationFixRoundTripsOnTheLab(t *testing.T) {
	start := time.Now()
	cases, err := traefikoracle.Load(oracleCasesFile)
	require.NoError(t, err)
	installTraefikCRDs(t)
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	createOAuth2ProxyPortal(t, dc)

	// The lab's Ingress names traefik-forward-auth@kubernetescrd: Middleware traefik/forward-auth.
	mw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": "forward-auth", "namespace": "traefik"},
		"spec":     map[string]any{"forwardAuth": oracleCase(t, "oauth2-proxy-path").ForwardAuth},
	}}
	_, err = dc.Resource(middlewaresGVR).Namespace("traefik").Create(context.Background(), mw, metav1.CreateOptions{})
	require.NoError(t, err, "the real API server takes the oracle's forwardAuth under Traefik's CRD")

	serveTraefikAnswer(t, dc, cases)
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
	assert.Equal(t, patched.ForwardAuth, stored.Object["spec"].(map[string]any)["forwardAuth"], "the stored forwardAuth is the one proven with Traefik")

	loc := serveTraefikAnswer(t, dc, cases)
	assert.Equal(t, patched.Browser.Location, loc)
	r = doctor(t, "--only", "LA401", "--no-helpers")
	assert.Equal(t, 0, r.Code, r.statuses())
	c = r.check(t, "LA401")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions("info", "Location on grafana.apps.example.com"), "%+v", c.Findings)
	t.Logf("fixed doctor: %s in %s; test %s", r.statuses(), r.Elapsed, time.Since(start))
}

// serveTraefikAnswer makes the lab's proxy answer the probe host with what Traefik gives the
// browser for Middleware traefik/forward-auth as the API server holds it, when oauth2-proxy
// answers with a path, and returns that Location.
func serveTraefikAnswer(t *testing.T, dc dynamic.Interface, cases traefikoracle.Cases) string {
	t.Helper()
	mw, err := dc.Resource(middlewaresGVR).Namespace("traefik").Get(context.Background(), "forward-auth", metav1.GetOptions{})
	require.NoError(t, err)
	fa, _, _ := unstructured.NestedMap(mw.Object, "spec", "forwardAuth")
	browser, ok := cases.Gives(traefikoracle.Case{ForwardAuth: fa}.Of(), oauth2ProxyAnswer)
	require.True(t, ok, "no oracle case for forwardAuth %v: prove it with Traefik first", fa)
	lab.RedirectForwardAuthTo(t, "monitoring", "grafana", browser.Location)
	waitLocation(t, browser.Location)
	return browser.Location
}

// installTraefikCRDs creates Traefik's Middleware and IngressRoute CRDs, read from the Traefik
// module the oracle runs (through the Go module proxy, never copied into this repository), and
// deletes them at cleanup.
func installTraefikCRDs(t *testing.T) {
	t.Helper()
	version, err := traefikoracle.TraefikVersion("../../testdata/oracle/traefik")
	require.NoError(t, err)
	deploy, err := lab.Client.AppsV1().Deployments("traefik").Get(context.Background(), "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "docker.io/traefik:"+version, deploy.Spec.Template.Spec.Containers[0].Image, "the lab's Traefik is the oracle's, whose CRDs these are")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", traefikoracle.TraefikModule+"@"+version)
	dl.Dir = t.TempDir() // outside any module: nothing of ours is touched
	out, err := dl.Output()
	require.NoError(t, err, "go mod download: %s", out)
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	dir := filepath.Join(mod.Dir, "docs", "content", "reference", "dynamic-configuration")
	kubectl(t, "create", "-f", filepath.Join(dir, "traefik.io_middlewares.yaml"), "-f", filepath.Join(dir, "traefik.io_ingressroutes.yaml"))
	t.Cleanup(func() {
		kubectl(t, "delete", "crd", "middlewares.traefik.io", "ingressroutes.traefik.io", "--wait=true", "--timeout=60s")
	})
	kubectl(t, "wait", "--for", "condition=established", "--timeout=60s", "crd/middlewares.traefik.io", "crd/ingressroutes.traefik.io")
}

// createOAuth2ProxyPortal creates oauth2-proxy's Service and its IngressRoute under /oauth2/ of
// the probe host (oauth2-proxy's Traefik guide): the route that makes a path kept as written
// reach the auth server. Namespace auth is deleted at cleanup.
func createOAuth2ProxyPortal(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	_, err := lab.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "auth"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.CoreV1().Namespaces().Delete(context.Background(), "auth", metav1.DeleteOptions{})
		eventually(t, 60*time.Second, func() error {
			_, err := lab.Client.CoreV1().Namespaces().Get(context.Background(), "auth", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return errorf("namespace auth is still there (%v)", err)
		})
	})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "oauth2-proxy", Namespace: "auth"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": "oauth2-proxy"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 4180, TargetPort: intstr.FromInt32(4180), Protocol: corev1.ProtocolTCP}},
		},
	}
	_, err = lab.Client.CoreV1().Services("auth").Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
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
	_, err = dc.Resource(ingressRoutesGVR).Namespace("auth").Create(ctx, ir, metav1.CreateOptions{})
	require.NoError(t, err)
}
