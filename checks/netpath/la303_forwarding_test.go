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
		})
	}
}
