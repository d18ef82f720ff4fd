package netpath

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// doctor naming both Services stays in their namespace (issue 24): the routes of the other
// namespaces are not read, so discovery falls back to the zone apex, which usually no route
// serves. The HTTPS checks then SKIP asking for --host (or -A) instead of failing LA401 on the
// apex's 404; a host a route or --host gave, or the routes read, probe as before.
func TestHTTPSChecksAskForAHostWhenTheRoutesWereOutOfScope(t *testing.T) {
	apex := proxyroute.ProbeHost{Name: "apps.example.com", Source: "zone apex (no route of the proxy for the zone was found; name one with --host)"}
	routed := proxyroute.ProbeHost{Name: "grafana.apps.example.com", Source: "Ingress monitoring/grafana", Route: "Ingress monitoring/grafana"}
	given := proxyroute.ProbeHost{Name: "grafana.apps.example.com", Source: "--host"}
	outOfScope := map[string]error{
		kube.ReadKey("networking.k8s.io", "ingresses", ""): &kube.ScopeError{Namespaces: []string{"traefik"}},
		kube.ReadKey("", "nodes", ""):                      &kube.ScopeError{Namespaces: []string{"traefik"}},
	}
	nodesOnly := map[string]error{kube.ReadKey("", "nodes", ""): &kube.ScopeError{Namespaces: []string{"traefik"}}}
	for _, tc := range []struct {
		name    string
		host    proxyroute.ProbeHost
		partial map[string]error
		skip    bool
	}{
		{"apex, routes out of scope", apex, outOfScope, true},
		{"apex, routes read", apex, nodesOnly, false},
		{"a route's host", routed, outOfScope, false},
		{"--host", given, outOfScope, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &kube.Setup{Zone: zone.MustParse("apps.example.com"), Model: proxyroute.Model{ProbeHost: tc.host}, Scope: []string{"traefik"}, Partial: tc.partial}
			p := PathFromSetup(s)
			if !tc.skip {
				assert.Empty(t, p.NoHost)
				return
			}
			assert.Contains(t, p.NoHost, "needs --host")
			assert.Contains(t, p.NoHost, "ingresses.networking.k8s.io")
			p.HTTPS = []Target{{}}
			set, err := probe.NewSet(probe.Config{})
			require.NoError(t, err)
			_, _, out, ok := httpsPath(&Env{Path: p, Probes: set})
			assert.False(t, ok)
			assert.Equal(t, p.NoHost, out.Skip)
		})
	}
}
