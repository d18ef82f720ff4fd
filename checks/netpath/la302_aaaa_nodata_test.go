package netpath

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestAAAANoData(t *testing.T) {
	tests := []struct {
		name      string
		zone      func(z *probetest.Zone)
		dead      bool
		want      engine.Status
		message   string
		fixesWith string
	}{
		{name: "NODATA on every address passes", want: engine.StatusPass},
		{
			name: "NXDOMAIN fails and explains the RFC 8020 cut",
			zone: func(z *probetest.Zone) { z.OtherTypesRcode = dns.RcodeNameError },
			want: engine.StatusFail, message: "NXDOMAIN", fixesWith: "template ANY ANY",
		},
		{
			name: "SERVFAIL fails: the question falls through the templates",
			zone: func(z *probetest.Zone) { z.OtherTypesRcode = dns.RcodeServerFailure },
			want: engine.StatusFail, message: "SERVFAIL", fixesWith: "rcode NOERROR",
		},
		{
			name: "a public AAAA fails and names the address",
			zone: func(z *probetest.Zone) { z.AAAA = []netip.Addr{netip.MustParseAddr("2001:db8::443")} },
			want: engine.StatusFail, message: "2001:db8::443",
		},
		{name: "a dead address fails once", dead: true, want: engine.StatusFail, message: "gave no answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newNetFixture(t)
			f.cfg.Timeout = 400 * time.Millisecond
			z := healthyLANZone()
			if tc.zone != nil {
				tc.zone(z)
			}
			f.serveDNS(0, healthyLANZone())
			f.serveDNS(1, healthyLANZone())
			if tc.dead {
				f.blackhole(2)
			} else {
				f.serveDNS(2, z)
			}
			st, o := runNetCheck(t, AAAANoData(f.env()))
			assert.Equal(t, tc.want, st, "findings: %+v", o.Findings)
			for _, fd := range o.Findings {
				assert.Equal(t, "grafana.apps.example.com", fd.Evidence["probeHost"])
			}
			if tc.want != engine.StatusFail {
				return
			}
			assert.Empty(t, netFindings(o, engine.SeverityFail, lanNode(0)), "healthy addresses are not blamed")
			fails := netFindings(o, engine.SeverityFail, lanNode(2))
			require.NotEmpty(t, fails)
			if tc.dead {
				assert.Len(t, fails, 1, "a dead address is said once")
			}
			assert.Contains(t, fails[0].Message, tc.message)
			assert.Contains(t, fails[0].Remediation, tc.fixesWith)
		})
	}
}

// Dual stack: AAAA answers are judged against the DNS Service's IPv6 externalIPs (what
// kube-proxy captures), the A answers against the IPv4 ones.
func TestDualStackAAAAAnswersTheServicesIPv6Addresses(t *testing.T) {
	v6 := []netip.Addr{netip.MustParseAddr("fd00:10::11"), netip.MustParseAddr("fd00:10::12"), netip.MustParseAddr("fd00:10::13")}
	for _, tc := range []struct {
		name string
		aaaa []netip.Addr
		want engine.Status
	}{
		{"the Services' IPv6 addresses pass", v6, engine.StatusPass},
		{"NODATA still passes (the seed's design)", nil, engine.StatusPass},
		{"another IPv6 address fails", []netip.Addr{netip.MustParseAddr("2001:db8::443")}, engine.StatusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNetFixture(t)
			f.cfg.Timeout = 500 * time.Millisecond
			for _, a := range v6 {
				f.setup.DNSService.Spec.ExternalIPs = append(f.setup.DNSService.Spec.ExternalIPs, a.String())
			}
			for i := range lanNodeIPs {
				z := healthyLANZone()
				z.AAAA = tc.aaaa
				f.serveDNS(i, z)
				// The IPv6 address of node i reaches the same stand-in server.
				f.redirect[netip.AddrPortFrom(v6[i], 53)] = f.redirect[netip.AddrPortFrom(netip.MustParseAddr(lanNodeIPs[i]), 53)]
			}
			env := f.env()
			st, o := runNetCheck(t, AAAANoData(env))
			assert.Equal(t, tc.want, st, "%+v", o.Findings)
			if tc.want == engine.StatusFail {
				f := netFindings(o, engine.SeverityFail, "")
				require.NotEmpty(t, f)
				assert.Contains(t, f[0].Message, "not the DNS Service's IPv6 externalIPs")
				assert.Contains(t, f[0].Remediation, "template IN AAAA")
				assert.NotContains(t, f[0].Remediation, "IN A fd00", "IPv6 never goes into an A answer")
			}
			st, o = runNetCheck(t, DNSAnswers(env))
			assert.Equal(t, engine.StatusPass, st, "A answers are judged against the IPv4 addresses only: %+v", o.Findings)
		})
	}
}
