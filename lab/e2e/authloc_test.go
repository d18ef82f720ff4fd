//go:build lab

package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/traefikoracle"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
)

// LA401 judges where the probe host's redirect sends the browser. The fault is the one Traefik
// produces: the lab's auth server, asked by the real Traefik on the Middleware's forwardAuth
// address (a cluster name), writes its Location as a path, and Traefik resolves it against that
// address; the browser gets a Location no LAN browser can resolve.

// oracleCasesFile holds what Traefik's forwardAuth gives the browser, case by case (proven on
// the lab's Traefik by traefik_forwardauth_test.go).
const oracleCasesFile = "../../testdata/traefik-forwardauth.json"

// oracleBrowserLocation is the Location Traefik gives the browser in the oracle's case name.
func oracleBrowserLocation(t *testing.T, name string) string {
	t.Helper()
	c := oracleCase(t, name)
	require.Equal(t, http.StatusFound, c.Browser.Status, "case %s", name)
	return c.Browser.Location
}

func oracleCase(t *testing.T, name string) traefikoracle.Case {
	t.Helper()
	cs, err := traefikoracle.Load(oracleCasesFile)
	require.NoError(t, err)
	c, ok := cs.Named(name)
	require.True(t, ok, "%s has no case %s", oracleCasesFile, name)
	return c
}

// proxyAddresses are the proxy's node addresses, the ones LA401 probes.
var proxyAddresses = []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}

// locationOf is the Location the proxy answers https://probeHost/ with on ip.
func locationOf(ip string) (string, error) {
	resp, err := httpsVia(probeHost, ip, 3*time.Second)
	if err != nil {
		return "", err
	}
	return resp.Header.Get("Location"), nil
}

// waitLocation waits until every proxy address answers the probe host with a redirect to want.
func waitLocation(t *testing.T, want string) {
	t.Helper()
	eventually(t, 15*time.Second, func() error {
		for _, ip := range proxyAddresses {
			got, err := locationOf(ip)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%s redirects to %q, want %q", ip, got, want)
			}
		}
		return nil
	})
}

func TestDoctorFailsLA401WhenTheRedirectNamesAClusterNameAndPassesWhenRepaired(t *testing.T) {
	start := time.Now()
	healthy, err := locationOf(proxyAddresses[0])
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(healthy, "https://auth.example.com/"), "the healthy lab sends to its identity provider: %q", healthy)
	internal := oracleBrowserLocation(t, "oauth2-proxy-path")
	require.Contains(t, internal, ".svc.cluster.local", "the oracle's case is a Location on a cluster name")
	authAnswer := oracleCase(t, "oauth2-proxy-path").Auth

	t.Run("internal", func(t *testing.T) {
		lab.AnswerForwardAuth(t, probeHost, &fwdauth.Answer{Status: authAnswer.Status, Location: authAnswer.Location})
		waitLocation(t, internal)
		r := doctor(t, "--only", "LA401", "--no-helpers")
		assert.Equal(t, 1, r.Code, r.statuses())
		c := r.check(t, "LA401")
		require.Equal(t, "fail", c.Status, "%+v", c.Findings)
		var addrs []string
		for _, f := range c.Findings {
			if f.Severity != "fail" {
				continue
			}
			require.Equal(t, "LA401-LOCATION-INTERNAL", f.Code, "the only failure is the Location: %+v", f)
			addr, _, _ := strings.Cut(f.Message, " ")
			addrs = append(addrs, addr)
			assert.Contains(t, f.Message, "redirects https://"+probeHost+"/ to "+internal)
			assert.Contains(t, f.Message, "the cluster-internal name of Service auth/oauth2-proxy")
			// The real Middleware traefik/forward-auth asks the auth server on its cluster name, but
			// no route of the probe host sends a path to the auth server: preserveLocationHeader
			// alone would leave the browser a path nothing serves, so the fix is the auth server's,
			// which doctor says it cannot prove (with such a route, authloc_fix_test.go).
			assert.Contains(t, f.Remediation, "doctor does not read the auth server's configuration and cannot prove this fix")
			assert.Contains(t, f.Remediation, "preserveLocationHeader: true on Middleware traefik/forward-auth would pass a path as written")
			assert.NotContains(t, f.Remediation, "patch middleware", "no route sends the path to the auth server")
		}
		sort.Strings(addrs)
		assert.Equal(t, proxyAddresses, addrs, "one LA401-LOCATION-INTERNAL per proxy address")
		t.Logf("broken doctor: %s in %s", r.statuses(), r.Elapsed)
	})

	// The cleanup gave the route back its identity provider's answer.
	waitLocation(t, healthy)
	r := doctor(t, "--only", "LA401", "--no-helpers")
	assert.Equal(t, 0, r.Code, r.statuses())
	c := r.check(t, "LA401")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
	for _, f := range c.Findings {
		assert.NotEqual(t, "LA401-LOCATION-INTERNAL", f.Code, "%+v", f)
	}
	t.Logf("repaired doctor: %s in %s; test %s", r.statuses(), r.Elapsed, time.Since(start))
}
