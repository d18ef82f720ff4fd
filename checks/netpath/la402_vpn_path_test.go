package netpath

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
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
			name:     "a name the system resolver does not know is SKIP with the reason, never PASS",
			resolver: stubResolver{err: errors.New("no such host")},
			want:     engine.StatusSkip, message: "gives no address",
		},
		{
			name:     "a system resolver that already gives the LAN addresses is SKIP: nothing to compare",
			resolver: stubResolver{addrs: lanNodeAddrs()[:1]},
			want:     engine.StatusSkip, message: "already gives the LAN addresses",
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
			name:     "a system resolver's address that does not answer is SKIP (not on the VPN)",
			resolver: stubResolver{addrs: []netip.Addr{vpn}},
			want:     engine.StatusSkip, message: "did not answer HTTPS from this machine",
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
			if tc.want == engine.StatusSkip {
				assert.Contains(t, o.Skip, tc.message, "the reason says why nothing was compared")
			}
			require.NotEmpty(t, o.Findings)
			assert.Contains(t, o.Findings[0].Message, tc.message)
			for _, fd := range o.Findings {
				assert.Equal(t, "grafana.apps.example.com", fd.Evidence["probeHost"])
			}
		})
	}
}

// gatedProber holds LA401's HTTPS probes until the system resolver's lookup is in flight, and
// the lookup until LA401 has finished: the run completes only when the lookup runs beside the
// other probes. A lookup asked after them (LA402 asking only when its turn comes, behind LA401
// in a run of one slot) would leave LA401 waiting for it and end in LA401's ERROR.
type gatedProber struct {
	*probe.Set
	lookupStarted chan struct{}
	release       chan struct{}
	startOnce     sync.Once
}

func (g *gatedProber) Get(ctx context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error) {
	select {
	case <-g.lookupStarted:
	case <-ctx.Done():
		return nil, fmt.Errorf("the system resolver's lookup had not begun while LA401 probed: %w", ctx.Err())
	}
	return g.Set.Get(ctx, req)
}

func (g *gatedProber) LookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	g.startOnce.Do(func() { close(g.lookupStarted) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Set.LookupHost(ctx, host)
}

func TestSamePathAnswerLooksUpBesideTheOtherProbes(t *testing.T) {
	ca := probetest.NewCA(t)
	cert := ca.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	vpn := netip.MustParseAddr(vpnIP)
	f := httpsFixture(t, ca, func(_ int, s *probetest.HTTPSServer) bool { s.Cert = cert; return true })
	f.cfg.Resolver = stubResolver{addrs: []netip.Addr{vpn}}
	f.redirect[netip.AddrPortFrom(vpn, 443)] = probetest.StartHTTPS(t, vpnIP, probetest.HTTPSServer{Cert: cert, Handler: probetest.RedirectTo(http.StatusFound, idpLocation)})
	env := f.env()
	gated := &gatedProber{Set: env.Probes.(*probe.Set), lookupStarted: make(chan struct{}), release: make(chan struct{})}
	env.Probes = gated
	la401, la402 := HTTPSAnswer(env), SamePathAnswer(env)
	la402.DependsOn = []string{"LA401"} // the worst order: LA402's turn comes after LA401's
	r := &engine.Runner{Checks: []engine.Check{la401, la402}, Parallel: 1, Observe: func(e engine.Event) {
		if e.Result != nil && e.Check.ID == "LA401" {
			close(gated.release)
		}
	}}
	st := map[string]engine.Result{}
	for _, res := range r.Run(t.Context()) {
		st[res.ID] = res
	}
	assert.Equal(t, engine.StatusPass, st["LA401"].Status, "LA401: %s", st["LA401"].Reason)
	require.NotEmpty(t, st["LA402"].Findings)
	assert.Equal(t, "LA402-SAME", st["LA402"].Findings[0].Code, "LA402 compared the two paths: %+v", st["LA402"])
}
