package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// Discovery on the fake clientsets of the healthy fixtures with a redirect overlay: the
// expected redirect hosts come from objects as the API returns them.
func TestDiscoverDerivesTheRedirectTargetsOfTheProbeHost(t *testing.T) {
	tests := []struct {
		overlay    string
		want       []proxyroute.RedirectHost
		service    string
		portalHere bool
		why        string
	}{
		{
			overlay: "", service: "auth/oauth2-proxy",
			why: "the forwardAuth address of Middleware monitoring/forward-auth names Service auth/oauth2-proxy, which no route the proxy serves has as its backend, and carries no URL in its query: the auth server's public name is not in the cluster's objects",
		},
		{
			overlay: "authelia-portal", service: "auth/authelia",
			want: []proxyroute.RedirectHost{{Host: "auth.example.com", Origin: "IngressRoute auth/authelia, whose backend is Service auth/authelia, the forwardAuth address's"}},
		},
		{
			overlay: "oauth2-proxy-path-on-probe-host", service: "auth/oauth2-proxy", portalHere: true,
			want: []proxyroute.RedirectHost{{Host: "grafana.apps.example.com", Origin: "IngressRoute auth/oauth2-proxy, whose backend is Service auth/oauth2-proxy, the forwardAuth address's"}},
		},
	}
	for _, tc := range tests {
		t.Run("overlay "+tc.overlay, func(t *testing.T) {
			dirs := []string{healthyDir}
			if tc.overlay != "" {
				dirs = append(dirs, "../../testdata/fixtures/redirect/"+tc.overlay)
			}
			objs, err := fixture.Load(dirs...)
			require.NoError(t, err)
			cs, dc, err := fixture.Clients(objs)
			require.NoError(t, err)
			s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
			require.NoError(t, err)
			require.Equal(t, "grafana.apps.example.com", s.ProbeHost.Name)
			rt := s.ProbeHost.Redirect
			assert.Equal(t, "monitoring/forward-auth", rt.Middleware)
			assert.Equal(t, tc.want, rt.Hosts)
			assert.Equal(t, tc.service, rt.Service)
			assert.Equal(t, tc.portalHere, rt.PortalOnProbeHost)
			assert.Equal(t, tc.why, rt.Why)
			assert.Contains(t, rt.Unresolvable(rt.AddressHost), "Service "+tc.service)
		})
	}
}
