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

func TestForwarding(t *testing.T) {
	tests := []struct {
		name        string
		outsideName string
		broken      func(z *probetest.Zone) // applied to node-3's server
		want        engine.Status
		message     string
	}{
		{name: "the default outside name resolving on every address passes, with the open resolver noted", want: engine.StatusPass},
		{name: "the outside name is a flag", outsideName: "intranet.corp.", want: engine.StatusPass},
		{
			name:   "a missing '.' block (REFUSED) fails",
			broken: func(z *probetest.Zone) { z.Rcode = dns.RcodeRefused },
			want:   engine.StatusFail, message: "refuses",
		},
		{
			name:   "an unreachable upstream (SERVFAIL) fails",
			broken: func(z *probetest.Zone) { z.Rcode = dns.RcodeServerFailure },
			want:   engine.StatusFail, message: "cannot reach its upstream",
		},
		{
			name:   "NXDOMAIN for the outside name fails and suggests --outside-name",
			broken: func(z *probetest.Zone) { delete(z.Outside, "example.org.") },
			want:   engine.StatusFail, message: "--outside-name",
		},
		{
			name:   "an upstream that never answers is the upstream's failure, named, not a dead address",
			broken: func(z *probetest.Zone) { z.SilentOutside = true },
			want:   engine.StatusFail, message: "answers the zone but gave no answer for example.org",
		},
		{
			name:   "NODATA for the outside name warns",
			broken: func(z *probetest.Zone) { z.Outside["example.org."] = nil },
			want:   engine.StatusWarn, message: "NODATA",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newNetFixture(t)
			f.cfg.Timeout = 400 * time.Millisecond
			f.opts.OutsideName = tc.outsideName
			for i := range lanNodeIPs {
				z := healthyLANZone()
				z.Outside["intranet.corp."] = []netip.Addr{netip.MustParseAddr("192.0.2.7")}
				if tc.broken != nil && i == 2 {
					tc.broken(z)
				}
				f.serveDNS(i, z)
			}
			st, o := runNetCheck(t, Forwarding(f.env()))
			assert.Equal(t, tc.want, st, "findings: %+v", o.Findings)
			if tc.message != "" {
				sev := engine.SeverityFail
				if tc.want == engine.StatusWarn {
					sev = engine.SeverityWarn
				}
				fs := netFindings(o, sev, lanNode(2))
				require.Len(t, fs, 1)
				assert.Contains(t, fs[0].Message, tc.message)
				return
			}
			info := netFindings(o, engine.SeverityInfo, "Service lan-dns/lan-dns")
			require.Len(t, info, 1)
			assert.Contains(t, info[0].Message, "open to every machine")
			want := DefaultOutsideName
			if tc.outsideName != "" {
				want = "intranet.corp"
			}
			assert.Equal(t, want, info[0].Evidence["outsideName"])
			assert.Contains(t, info[0].Remediation, `"externalTrafficPolicy":"Local"`, "an acl behind kube-proxy's masquerade would see node addresses")
		})
	}
}

// CoreDNS's forward plugin answers SERVFAIL only after its own timeouts: a forwarded name that
// times out on a live address must not write the address off for the checks that ask the zone.
func TestAForwardingTimeoutDoesNotMakeTheAddressDead(t *testing.T) {
	f := newNetFixture(t)
	f.cfg.Timeout = 300 * time.Millisecond
	for i := range lanNodeIPs {
		z := healthyLANZone()
		z.SilentOutside = true
		f.serveDNS(i, z)
	}
	env := f.env()
	st, o := runNetCheck(t, Forwarding(env))
	assert.Equal(t, engine.StatusFail, st)
	fs := netFindings(o, engine.SeverityFail, lanNode(0))
	require.Len(t, fs, 1)
	assert.Equal(t, "LA303-UPSTREAM-SILENT", fs[0].Code)
	assert.Contains(t, fs[0].Message, "forward . /etc/resolv.conf", "the upstream is named")
	assert.Nil(t, o.Err, "every address answered the zone: not an ERROR asking whether this machine is on the LAN")

	st, o = runNetCheck(t, DNSAnswers(env))
	assert.Equal(t, engine.StatusPass, st, "the addresses answer the zone: %+v", o.Findings)
	st, _ = runNetCheck(t, NoClusterLeak(env))
	assert.Equal(t, engine.StatusPass, st, "cluster names that go unanswered upstream are no leak")
}
