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

const idpLocation = "https://auth.example.com/oauth2/start?rd=https%3A%2F%2Fgrafana.apps.example.com%2F"

// httpsFixture serves the healthy proxy (302 to the identity provider, a CA-signed wildcard
// certificate) on every node, except where server overrides one.
func httpsFixture(t *testing.T, ca *probetest.CA, server func(i int, s *probetest.HTTPSServer) bool) *netFixture {
	t.Helper()
	f := newNetFixture(t)
	f.cfg.Timeout = 400 * time.Millisecond
	f.cfg.HTTPS = &probe.HTTPSClient{Timeout: f.cfg.Timeout, Roots: ca.Pool()}
	wildcard := ca.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	for i := range lanNodeIPs {
		s := probetest.HTTPSServer{Cert: wildcard, Handler: probetest.RedirectTo(http.StatusFound, idpLocation)}
		if server != nil && !server(i, &s) {
			f.blackhole(i)
			continue
		}
		f.serveHTTPS(i, s)
	}
	return f
}

func TestHTTPSAnswer(t *testing.T) {
	ca := probetest.NewCA(t)
	otherCA := probetest.NewCA(t)
	expiring := ca.Issue(t, time.Now().Add(3*24*time.Hour), "*.apps.example.com")
	untrusted := otherCA.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	onNode := func(n int, change func(s *probetest.HTTPSServer)) func(int, *probetest.HTTPSServer) bool {
		return func(i int, s *probetest.HTTPSServer) bool {
			if i == n {
				change(s)
			}
			return true
		}
	}
	tests := []struct {
		name     string
		server   func(i int, s *probetest.HTTPSServer) bool
		opts     func(o *Options)
		want     engine.Status
		object   string // the object of the finding that sets the status
		message  string
		fixHints string
	}{
		{name: "a 302 to the identity provider with a valid certificate on every address passes", want: engine.StatusPass},
		{
			name: "the Location is checked against --expect-location as a host",
			opts: func(o *Options) { o.ExpectLocation = mustRule(t, "auth.example.com") },
			want: engine.StatusPass,
		},
		{
			name: "a Location elsewhere fails --expect-location",
			opts: func(o *Options) { o.ExpectLocation = mustRule(t, `^https://sso\.corp\.example/`) },
			want: engine.StatusFail, object: lanNode(0), message: "does not match --expect-location",
		},
		{
			name: "200 instead of 302 fails: the route has no authentication middleware",
			server: onNode(1, func(s *probetest.HTTPSServer) {
				s.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			}),
			want: engine.StatusFail, object: lanNode(1), message: "no authentication middleware", fixHints: "--expect-status 200",
		},
		{
			name:   "--expect-status 200 accepts a public route",
			server: func(_ int, s *probetest.HTTPSServer) bool { s.Handler = probetest.EchoHost(); return true },
			opts:   func(o *Options) { o.ExpectStatus = 200 },
			want:   engine.StatusPass,
		},
		{
			name: "a redirect back to the same URL fails as a loop, not followed",
			server: onNode(0, func(s *probetest.HTTPSServer) {
				s.Handler = probetest.RedirectTo(http.StatusFound, "https://grafana.apps.example.com/")
			}),
			want: engine.StatusFail, object: lanNode(0), message: "loops",
		},
		{
			name: "a certificate for another host fails and names what it covers",
			server: onNode(2, func(s *probetest.HTTPSServer) {
				s.Cert = ca.Issue(t, time.Now().Add(60*24*time.Hour), "nginx.other.example")
			}),
			want: engine.StatusFail, object: lanNode(2), message: "nginx.other.example", fixHints: "openssl s_client",
		},
		{
			name: "Traefik's default certificate fails and says no router matched",
			server: onNode(0, func(s *probetest.HTTPSServer) {
				s.Cert = probetest.TraefikDefault(t)
				s.Handler = http.NotFoundHandler()
			}),
			want: engine.StatusFail, object: lanNode(0), message: "no certificate Traefik holds covers this host",
		},
		{
			name:   "a certificate expiring in a few days warns",
			server: func(_ int, s *probetest.HTTPSServer) bool { s.Cert = expiring; return true },
			want:   engine.StatusWarn, object: lanNode(0), message: "expires in 2 days",
		},
		{
			name:   "an untrusted certificate fails and points at --ca-file",
			server: func(_ int, s *probetest.HTTPSServer) bool { s.Cert = untrusted; return true },
			want:   engine.StatusFail, object: lanNode(0), message: "does not trust", fixHints: "--ca-file",
		},
		{
			name:   "--insecure accepts an untrusted certificate but still says so",
			server: func(_ int, s *probetest.HTTPSServer) bool { s.Cert = untrusted; return true },
			opts:   func(o *Options) { o.Insecure = true },
			want:   engine.StatusPass, object: lanNode(0), message: "accepted because of --insecure",
		},
		{
			name: "different certificates on different addresses warn",
			server: onNode(1, func(s *probetest.HTTPSServer) {
				s.Cert = ca.Issue(t, time.Now().Add(90*24*time.Hour), "*.apps.example.com")
			}),
			want: engine.StatusWarn, object: "Service traefik/traefik", message: "different certificates",
		},
		{
			name:   "a dead address fails once and the others are judged",
			server: func(i int, _ *probetest.HTTPSServer) bool { return i != 2 },
			want:   engine.StatusFail, object: lanNode(2), message: "127.0.0.13 gave no answer",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := httpsFixture(t, ca, tc.server)
			if tc.opts != nil {
				tc.opts(&f.opts)
			}
			st, o := runNetCheck(t, HTTPSAnswer(f.env()))
			assert.Equal(t, tc.want, st, "findings: %+v", o.Findings)
			for _, fd := range o.Findings {
				assert.Equal(t, "grafana.apps.example.com", fd.Evidence["probeHost"])
			}
			if tc.object == "" {
				info := netFindings(o, engine.SeverityInfo, "Service traefik/traefik")
				require.Len(t, info, 1)
				assert.Contains(t, info[0].Message, "3 of 3 addresses answered")
				return
			}
			sev := map[engine.Status]engine.Severity{engine.StatusFail: engine.SeverityFail, engine.StatusWarn: engine.SeverityWarn, engine.StatusPass: engine.SeverityInfo}[tc.want]
			fs := netFindings(o, sev, tc.object)
			require.NotEmpty(t, fs)
			assert.Contains(t, fs[0].Message, tc.message)
			assert.Contains(t, fs[0].Remediation, tc.fixHints)
			if tc.want == engine.StatusFail && tc.object != lanNode(1) && tc.object != lanNode(0) {
				assert.Empty(t, netFindings(o, engine.SeverityFail, lanNode(1)), "healthy addresses are not blamed")
			}
		})
	}
}

func TestHTTPSAnswerRejectsABadExpectLocation(t *testing.T) {
	for _, ok := range []string{"auth.example.com", `^https://auth\.example\.com/`} {
		_, err := ParseLocationRule(ok)
		require.NoError(t, err)
	}
	_, err := ParseLocationRule("https://(auth")
	require.ErrorContains(t, err, "--expect-location")
}

func TestHTTPSAnswerUsesTheProbeHostFromTheFlag(t *testing.T) {
	ca := probetest.NewCA(t)
	wiki := ca.Issue(t, time.Now().Add(60*24*time.Hour), "wiki.apps.example.com")
	f := httpsFixture(t, ca, func(_ int, s *probetest.HTTPSServer) bool { s.Cert = wiki; return true })
	f.host = "wiki.apps.example.com"
	st, o := runNetCheck(t, HTTPSAnswer(f.env()))
	assert.Equal(t, engine.StatusPass, st, "findings: %+v", o.Findings)
	assert.Equal(t, "--host", o.Findings[0].Evidence["probeHostSource"])
}
