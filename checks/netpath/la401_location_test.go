package netpath

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// The fixture's grafana route names Middleware monitoring/forward-auth; these tests give it a
// forwardAuth and the objects the expected Location is derived from.

const (
	autheliaAddress = "http://authelia.auth.svc.cluster.local:9091/api/authz/forward-auth"
	// rewrittenLogin is an absolute URL on the forwardAuth address's origin, as an auth server
	// may name itself (Traefik passes an absolute Location unchanged: oracle case
	// authelia-absolute; a path becomes such a URL: authelia-path).
	rewrittenLogin = "http://authelia.auth.svc.cluster.local:9091/login?rd=https%3A%2F%2Fgrafana.apps.example.com%2F"
)

func forwardAuthMiddleware(fa map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"namespace": "monitoring", "name": "forward-auth"},
		"spec":     map[string]any{"forwardAuth": fa},
	}}
}

// portalRoute is an IngressRoute of ns sending host (and a path prefix, when given) to Service
// ns/service.
func portalRoute(ns, name, host, pathPrefix, service string) unstructured.Unstructured {
	match := "Host(`" + host + "`)"
	if pathPrefix != "" {
		match += " && PathPrefix(`" + pathPrefix + "`)"
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{"routes": []any{map[string]any{
			"match": match, "services": []any{map[string]any{"name": service, "port": int64(80)}},
		}}},
	}}
}

// withForwardAuth gives the fixture's route its Middleware, the CRD, and extra routes.
func withForwardAuth(f *netFixture, fa map[string]any, routes ...unstructured.Unstructured) {
	s := f.setup
	s.Installed = map[string]bool{kube.TraefikMiddlewares()[0].Key(): true}
	s.Middlewares = []unstructured.Unstructured{forwardAuthMiddleware(fa)}
	s.IngressRoutes = append(s.IngressRoutes, routes...)
	s.Services = append(s.Services,
		corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "authelia"}},
		corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "oauth2-proxy"}})
}

// locationCase is one answer of the proxies and LA401's verdict on it.
type locationCase struct {
	name     string
	fa       map[string]any // nil: the fixture's Middleware is not in the cluster
	routes   []unstructured.Unstructured
	location string
	traefik  string // the oracle case whose browser answer the proxies give (location unset)
	expect   string // --expect-location
	want     engine.Status
	code     string   // the code of the finding that sets the status
	message  []string // parts of its message (of the summary's, for a pass)
	fix      []string // parts of its remediation
	noFix    []string // what its remediation must not print
}

func TestHTTPSAnswerJudgesTheLocationByTheRoutesForwardAuth(t *testing.T) {
	ca := probetest.NewCA(t)
	autheliaPortal := portalRoute("auth", "authelia", "auth.example.com", "", "authelia")
	oauth2OnGrafana := portalRoute("auth", "oauth2", "grafana.apps.example.com", "/oauth2/", "oauth2-proxy")
	tests := []locationCase{
		{
			name: "a redirect to the portal the routes to the forwardAuth's Service serve passes",
			fa:   map[string]any{"address": autheliaAddress}, routes: []unstructured.Unstructured{autheliaPortal},
			location: "https://auth.example.com/?rd=https%3A%2F%2Fgrafana.apps.example.com%2F",
			want:     engine.StatusPass, code: "LA401-SUMMARY",
			message: []string{"Location on auth.example.com (IngressRoute auth/authelia, whose backend is Service auth/authelia"},
		},
		{
			name: "a path of the auth server resolved against an internal forwardAuth address fails, and names Traefik's rewrite",
			fa:   map[string]any{"address": autheliaAddress}, routes: []unstructured.Unstructured{autheliaPortal},
			traefik: "authelia-path",
			want:    engine.StatusFail, code: "LA401-LOCATION-INTERNAL",
			message: []string{"authelia.auth.svc.cluster.local", "Service auth/authelia", "no browser on the LAN can follow it",
				"Traefik resolves a Location that the auth server writes as a path against that address"},
			fix:   []string{"authelia_url", "--redirect-url", "cannot prove this fix", "right only once a route of grafana.apps.example.com sends that path to the auth server, and none does"},
			noFix: []string{"kubectl -n monitoring patch"},
		},
		{
			name: "with a route of the probe host to the auth server, the fix is preserveLocationHeader, a Middleware patch",
			fa:   map[string]any{"address": "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth"}, routes: []unstructured.Unstructured{oauth2OnGrafana},
			traefik: "oauth2-proxy-path",
			want:    engine.StatusFail, code: "LA401-LOCATION-INTERNAL",
			message: []string{"Service auth/oauth2-proxy"},
			fix:     []string{`kubectl -n monitoring patch middleware forward-auth --type=merge -p '{"spec":{"forwardAuth":{"preserveLocationHeader":true}}}'`, "Traefik v3.3.0 or later", "--redirect-url"},
		},
		{
			name: "the kept path then lands on the probe host's route to the auth server and passes",
			fa:   map[string]any{"address": "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth", "preserveLocationHeader": true}, routes: []unstructured.Unstructured{oauth2OnGrafana},
			traefik: "oauth2-proxy-path-patched",
			want:    engine.StatusPass, code: "LA401-SUMMARY",
			message: []string{"Location on grafana.apps.example.com (IngressRoute auth/oauth2"},
		},
		{
			name: "an internal Location Traefik passed as written (preserveLocationHeader) is the auth server's own",
			fa:   map[string]any{"address": autheliaAddress, "preserveLocationHeader": true}, routes: []unstructured.Unstructured{autheliaPortal},
			location: rewrittenLogin,
			want:     engine.StatusFail, code: "LA401-LOCATION-INTERNAL",
			message: []string{"preserveLocationHeader passes the auth server's Location as written: the auth server names its own internal URL"},
			fix:     []string{"authelia_url"}, noFix: []string{"patch middleware"},
		},
		{
			name:     "a Location on a cluster name fails even without a forwardAuth",
			location: "http://grafana.monitoring.svc:3000/login",
			want:     engine.StatusFail, code: "LA401-LOCATION-INTERNAL",
			message: []string{"the cluster-internal name of Service monitoring/grafana"},
		},
		{
			name: "an identity provider no object names is a warning that names the expected hosts and --expect-location",
			fa:   map[string]any{"address": autheliaAddress}, routes: []unstructured.Unstructured{autheliaPortal},
			location: "https://accounts.google.com/o/oauth2/auth?client_id=x",
			want:     engine.StatusWarn, code: "LA401-LOCATION-UNEXPECTED",
			message: []string{"accounts.google.com", "auth.example.com (IngressRoute auth/authelia", "--expect-location"},
			fix:     []string{"kubectl lanaccess doctor --expect-location accounts.google.com"},
		},
		{
			name:     "a return URL on the forwardAuth's internal name fails: the provider sends the browser there after sign-in",
			fa:       map[string]any{"address": "http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth", "authSigninURL": "https://sso.example.com/oauth2/start"},
			location: "https://sso.example.com/oauth2/start?redirect_uri=http%3A%2F%2Foauth2-proxy.auth.svc.cluster.local%2Foauth2%2Fcallback",
			want:     engine.StatusFail, code: "LA401-RETURN-INTERNAL",
			message: []string{"redirect_uri= parameter sends the browser back to http://oauth2-proxy.auth.svc.cluster.local/oauth2/callback"},
			fix:     []string{"--redirect-url=https://<portal>/oauth2/callback"},
		},
		{
			name:     "--expect-location keeps precedence",
			fa:       map[string]any{"address": autheliaAddress},
			location: rewrittenLogin, expect: "authelia.auth.svc.cluster.local:9091",
			want: engine.StatusPass, code: "LA401-SUMMARY",
			message: []string{"Location matching authelia.auth.svc.cluster.local:9091"},
		},
		{
			name:     "when nothing names the target, the Location is not judged and the summary says why",
			fa:       map[string]any{"address": "http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth"},
			location: idpLocation,
			want:     engine.StatusPass, code: "LA401-SUMMARY",
			message: []string{"the Location was not judged", "names Service auth/oauth2-proxy, which no route the proxy serves has as its backend", "--expect-location judges it"},
		},
		{
			name:     "without the Middleware in the cluster, the Location is not judged either",
			location: idpLocation,
			want:     engine.StatusPass, code: "LA401-SUMMARY",
			message: []string{"the Location was not judged", "has no forwardAuth middleware"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runLocationCase(t, ca, tc) })
	}
}

// runLocationCase serves the case's answer on every address and checks LA401's verdict.
func runLocationCase(t *testing.T, ca *probetest.CA, tc locationCase) {
	t.Helper()
	status, location := http.StatusFound, tc.location
	if tc.traefik != "" {
		c := traefikCaseNamed(t, tc.traefik)
		require.Equal(t, c.ForwardAuth["address"], tc.fa["address"], "the oracle case is of this forwardAuth")
		require.Equal(t, c.ForwardAuth["preserveLocationHeader"], tc.fa["preserveLocationHeader"])
		status, location = c.Browser.Status, c.Browser.Location
	}
	f := httpsFixture(t, ca, func(_ int, s *probetest.HTTPSServer) bool {
		s.Handler = probetest.RedirectTo(status, location)
		return true
	})
	if tc.fa != nil {
		withForwardAuth(f, tc.fa, tc.routes...)
	}
	if tc.expect != "" {
		f.opts.ExpectLocation = mustRule(t, tc.expect)
	}
	st, o := runNetCheck(t, HTTPSAnswer(f.env()))
	require.Equal(t, tc.want, st, "findings: %+v", o.Findings)
	var found []engine.Finding
	for _, fd := range o.Findings {
		if fd.Code == tc.code {
			found = append(found, fd)
		}
	}
	if tc.code != "LA401-SUMMARY" {
		require.Len(t, found, 3, "one finding per address")
	}
	require.NotEmpty(t, found)
	for _, part := range tc.message {
		assert.Contains(t, found[0].Message, part)
	}
	for _, part := range tc.fix {
		assert.Contains(t, found[0].Remediation, part)
	}
	for _, part := range tc.noFix {
		assert.NotContains(t, found[0].Remediation, part)
	}
	redirect, ok := found[0].Evidence["redirect"].(map[string]any)
	require.True(t, ok, "the evidence carries the derivation: %+v", found[0].Evidence)
	if tc.fa != nil {
		assert.Equal(t, tc.fa["address"], redirect["forwardAuthAddress"])
		assert.Equal(t, "monitoring/forward-auth", redirect["middleware"])
	}
}

// The summary's evidence lists the expected hosts with their origin, for -o json.
func TestHTTPSAnswerEvidenceListsTheExpectedHostsAndTheirOrigin(t *testing.T) {
	ca := probetest.NewCA(t)
	f := httpsFixture(t, ca, func(_ int, s *probetest.HTTPSServer) bool {
		s.Handler = probetest.RedirectTo(http.StatusFound, "https://auth.example.com/")
		return true
	})
	withForwardAuth(f, map[string]any{"address": autheliaAddress + "?authelia_url=https%3A%2F%2Fauth.example.com%2F"})
	st, o := runNetCheck(t, HTTPSAnswer(f.env()))
	require.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	info := netFindings(o, engine.SeverityInfo, "Service traefik/traefik")
	require.Len(t, info, 1)
	redirect := info[0].Evidence["redirect"].(map[string]any)
	assert.Equal(t, []map[string]string{{"host": "auth.example.com", "origin": "the authelia_url= parameter of the forwardAuth address of Middleware monitoring/forward-auth"}},
		redirect["expectedHosts"])
	assert.Equal(t, "auth/authelia", redirect["forwardAuthService"])
	assert.True(t, strings.HasPrefix(redirect["forwardAuthInternal"].(string), "the cluster-internal name of Service auth/authelia"))
}
