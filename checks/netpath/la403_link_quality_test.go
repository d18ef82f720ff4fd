package netpath

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

func TestLinkQuality(t *testing.T) {
	ca := probetest.NewCA(t)
	// The delay is far beyond the rule's 50 ms margin and any loopback jitter, so the verdict
	// does not depend on the machine's load.
	const delay = 400 * time.Millisecond
	tests := []struct {
		name    string
		server  func(i int, s *probetest.HTTPSServer) bool
		timeout time.Duration
		want    engine.Status
		object  string
		message string
	}{
		{name: "addresses of similar speed pass", want: engine.StatusPass},
		{
			name: "a node slow to the first byte warns, with the rule stated",
			server: func(i int, s *probetest.HTTPSServer) bool {
				if i == 1 {
					s.Handler = probetest.Slow(delay, probetest.RedirectTo(http.StatusFound, idpLocation))
				}
				return true
			},
			want: engine.StatusWarn, object: lanNode(1), message: "median first byte",
		},
		{
			name: "a node slow to handshake warns",
			server: func(i int, s *probetest.HTTPSServer) bool {
				if i == 2 {
					s.HandshakeDelay = delay
				}
				return true
			},
			want: engine.StatusWarn, object: lanNode(2), message: "median TLS handshake",
		},
		{
			name:    "a dead node is left out of the comparison",
			server:  func(i int, _ *probetest.HTTPSServer) bool { return i != 0 },
			timeout: 300 * time.Millisecond,
			want:    engine.StatusPass,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := httpsFixture(t, ca, tc.server)
			f.cfg.Timeout = 2 * time.Second
			if tc.timeout > 0 {
				f.cfg.Timeout = tc.timeout
			}
			f.cfg.HTTPS = &probe.HTTPSClient{Timeout: f.cfg.Timeout, Roots: ca.Pool()}
			st, o := runNetCheck(t, LinkQuality(f.env()))
			assert.Equal(t, tc.want, st, "findings: %+v", o.Findings)
			info := netFindings(o, engine.SeverityInfo, "Service traefik/traefik")
			require.Len(t, info, 1)
			assert.Contains(t, info[0].Evidence["rule"], "more than 2x the median of the other addresses and more than 50ms above it")
			if tc.object == "" {
				assert.Empty(t, netFindings(o, engine.SeverityWarn, ""))
				return
			}
			warns := netFindings(o, engine.SeverityWarn, tc.object)
			require.Len(t, warns, 1)
			assert.Contains(t, warns[0].Message, tc.message)
			assert.Contains(t, warns[0].Remediation, "ethtool")
		})
	}
}
