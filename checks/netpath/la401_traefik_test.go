package netpath

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/internal/traefikoracle"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// What Traefik's forwardAuth gives the browser is not ours to guess: the cases of
// testdata/traefik-forwardauth.json are proven by running the lab's real Traefik
// (lab/e2e traefik_forwardauth_test.go), and the stand-in proxies of these tests answer exactly that.

const traefikCasesFile = "../../testdata/traefik-forwardauth.json"

// traefikCaseNamed returns a case of the oracle, a patched case with its forwardAuth resolved.
func traefikCaseNamed(t *testing.T, name string) traefikoracle.Case {
	t.Helper()
	cs, err := traefikoracle.Load(traefikCasesFile)
	require.NoError(t, err)
	c, ok := cs.Named(name)
	require.True(t, ok, "%s has no case %s", traefikCasesFile, name)
	return c
}

// traefikGives is what Traefik answers the browser when the forwardAuth is fa and the auth
// server answers auth: the case of the oracle file with that forwardAuth and auth answer.
func traefikGives(t *testing.T, fa *proxyroute.ForwardAuth, auth traefikoracle.Answer) traefikoracle.Answer {
	t.Helper()
	require.NotNil(t, fa, "the probe host has a forwardAuth")
	cs, err := traefikoracle.Load(traefikCasesFile)
	require.NoError(t, err)
	got, ok := cs.Gives(traefikoracle.ForwardAuth{Address: fa.Address, PreserveLocationHeader: fa.PreserveLocationHeader, AuthSigninURL: fa.AuthSigninURL}, auth)
	require.True(t, ok, "%s has no case for forwardAuth %+v and auth answer %+v: prove it with Traefik first", traefikCasesFile, *fa, auth)
	return got
}

var middlewarePatch = regexp.MustCompile(`(?m)^kubectl -n (\S+) patch middleware (\S+) --type=merge -p '([^']*)'$`)

// The fix LA401 prints for a Location Traefik resolved against an internal forwardAuth address
// round-trips: applied to the cluster's Middleware as printed, Traefik (the proven cases) then
// gives the browser a path on the probe host, whose route sends it to the auth server, and
// LA401 passes.
func TestHTTPSAnswerPreserveLocationFixRoundTrips(t *testing.T) {
	objs, err := fixture.Load("../../testdata/fixtures/healthy", "../../testdata/fixtures/redirect/oauth2-proxy-path-on-probe-host")
	require.NoError(t, err)
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	ca := probetest.NewCA(t)
	wildcard := ca.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	// oauth2-proxy, asked on /oauth2/auth without knowing its public URL, answers a path.
	authAnswer := traefikoracle.Answer{Status: http.StatusFound, Location: "/oauth2/start?rd=%2F"}

	run := func() engine.Outcome {
		t.Helper()
		s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
		require.NoError(t, err)
		browser := traefikGives(t, s.ProbeHost.Forward, authAnswer)
		redirect := map[netip.AddrPort]netip.AddrPort{}
		path := PathFromSetup(s)
		require.Len(t, path.HTTPS, 3)
		for i, target := range path.HTTPS {
			redirect[target.Addr] = probetest.StartHTTPS(t, lanNodeIPs[i], probetest.HTTPSServer{
				Cert: wildcard, Handler: probetest.RedirectTo(browser.Status, browser.Location)})
		}
		set, err := probe.NewSet(probe.Config{
			Timeout: 2 * time.Second, HTTPS: &probe.HTTPSClient{Timeout: 2 * time.Second, Roots: ca.Pool()},
			Redirect: func(a netip.AddrPort) netip.AddrPort { return redirect[a] },
		})
		require.NoError(t, err)
		_, o := runNetCheck(t, HTTPSAnswer(&Env{Path: path, Probes: set}))
		return o
	}

	// The fixture's proxy runs Traefik v3.1.2, which has no preserveLocationHeader: the fix
	// says to upgrade first.
	o := run()
	fails := netFindings(o, engine.SeverityFail, "")
	require.Len(t, fails, 3, "%+v", o.Findings)
	assert.Contains(t, fails[0].Remediation, "# the proxy runs Traefik v3.1.2 (image docker.io/traefik:v3.1.2), which has no preserveLocationHeader: upgrade Traefik and its CRDs to v3.3.0 or later first")

	// Upgraded to the Traefik the oracle runs, the patch alone is the fix.
	version, err := traefikoracle.TraefikVersion("../../lab/versions.env")
	require.NoError(t, err)
	deploy, err := cs.AppsV1().Deployments("traefik").Get(context.Background(), "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	deploy.Spec.Template.Spec.Containers[0].Image = "docker.io/traefik:" + version
	_, err = cs.AppsV1().Deployments("traefik").Update(context.Background(), deploy, metav1.UpdateOptions{})
	require.NoError(t, err)
	o = run()
	fails = netFindings(o, engine.SeverityFail, "")
	require.Len(t, fails, 3, "%+v", o.Findings)
	assert.Equal(t, "LA401-LOCATION-INTERNAL", fails[0].Code)
	assert.NotContains(t, fails[0].Remediation, "has no preserveLocationHeader")
	m := middlewarePatch.FindStringSubmatch(fails[0].Remediation)
	require.NotNil(t, m, "the fix is a Middleware patch: %s", fails[0].Remediation)
	assert.Equal(t, []string{"monitoring", "forward-auth"}, m[1:3], "the Middleware that holds the probe host's forwardAuth")
	var printed any
	require.NoError(t, json.Unmarshal([]byte(m[3]), &printed))
	assert.Equal(t, traefikCaseNamed(t, "oauth2-proxy-path-patched").Patch, printed, "the printed patch is the one proven with Traefik")

	gvr := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}
	_, err = dc.Resource(gvr).Namespace(m[1]).Patch(context.Background(), m[2], types.MergePatchType, []byte(m[3]), metav1.PatchOptions{})
	require.NoError(t, err)

	o = run()
	assert.Empty(t, netFindings(o, engine.SeverityFail, ""), "%+v", o.Findings)
	assert.Empty(t, netFindings(o, engine.SeverityWarn, ""), "%+v", o.Findings)
	info := netFindings(o, engine.SeverityInfo, "Service traefik/traefik")
	require.Len(t, info, 1)
	assert.Contains(t, info[0].Message, "Location on grafana.apps.example.com (IngressRoute auth/oauth2-proxy")
	assert.True(t, strings.HasPrefix(info[0].Message, "3 of 3 addresses answered"), info[0].Message)
}
