package netpath

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// stubResolver stands in for this machine's resolver (the system one would send packets off
// loopback).
type stubResolver struct {
	addrs []netip.Addr
	err   error
}

func (s stubResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return s.addrs, s.err
}

const vpnIP = "127.0.0.21"

func TestSamePathAnswer(t *testing.T) {
	ca := probetest.NewCA(t)
	cert := ca.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	other := ca.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	vpn := netip.MustParseAddr(vpnIP)
	tests := []struct {
		name     string
		resolver stubResolver
		// vpnServer serves the system resolver's address; nil = nothing answers there.
		vpnServer *probetest.HTTPSServer
		want      engine.Status
		message   string
	}{
		{
			name:     "a name the system resolver does not know is noted, never failed",
			resolver: stubResolver{err: errors.New("no such host")},
			want:     engine.StatusPass, message: "gives no address",
		},
		{
			name:     "a system resolver that already gives the LAN addresses is noted",
			resolver: stubResolver{addrs: lanNodeAddrs()[:1]},
			want:     engine.StatusPass, message: "already gives the LAN addresses",
		},
		{
			name:      "the same certificate and answer on both paths passes",
			resolver:  stubResolver{addrs: []netip.Addr{vpn}},
			vpnServer: &probetest.HTTPSServer{Cert: cert, Handler: probetest.RedirectTo(http.StatusFound, idpLocation)},
			want:      engine.StatusPass, message: "serve the same certificate",
		},
		{
			name:      "another certificate on the system resolver's path warns",
			resolver:  stubResolver{addrs: []netip.Addr{vpn}},
			vpnServer: &probetest.HTTPSServer{Cert: other, Handler: probetest.RedirectTo(http.StatusFound, idpLocation)},
			want:      engine.StatusWarn, message: "serves a certificate for grafana.apps.example.com other than",
		},
		{
			name:      "another answer on the system resolver's path warns",
			resolver:  stubResolver{addrs: []netip.Addr{vpn}},
			vpnServer: &probetest.HTTPSServer{Cert: cert, Handler: probetest.EchoHost()},
			want:      engine.StatusWarn, message: "answers 200",
		},
		{
			name:     "a system resolver's address that does not answer is noted (not on the VPN)",
			resolver: stubResolver{addrs: []netip.Addr{vpn}},
			want:     engine.StatusPass, message: "did not answer HTTPS from this machine",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := httpsFixture(t, ca, func(_ int, s *probetest.HTTPSServer) bool { s.Cert = cert; return true })
			f.cfg.Resolver = tc.resolver
			vpn443 := netip.AddrPortFrom(vpn, 443)
			if tc.vpnServer != nil {
				f.redirect[vpn443] = probetest.StartHTTPS(t, vpnIP, *tc.vpnServer)
			} else {
				f.redirect[vpn443] = probetest.Blackhole(t, vpnIP)
			}
			st, o := runNetCheck(t, SamePathAnswer(f.env()))
			assert.Equal(t, tc.want, st, "findings: %+v", o.Findings)
			require.NotEmpty(t, o.Findings)
			assert.Contains(t, o.Findings[0].Message, tc.message)
			for _, fd := range o.Findings {
				assert.Equal(t, "grafana.apps.example.com", fd.Evidence["probeHost"])
			}
		})
	}
}
