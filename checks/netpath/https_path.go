package netpath

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// httpsPath gathers what every HTTPS check needs, or says why the check cannot run.
func httpsPath(env *Env) (*Path, []Target, engine.Outcome, bool) {
	if env.Probes == nil {
		return nil, nil, engine.Outcome{Err: errNoProbes}, false
	}
	p := &env.Path
	if len(p.HTTPS) == 0 {
		return nil, nil, engine.Outcome{Skip: p.NoHTTPS}, false
	}
	if p.Host.Name == "" {
		return nil, nil, engine.Outcome{Skip: "no probe host: the zone is not known and --host was not given"}, false
	}
	if p.NoHost != "" {
		return nil, nil, engine.Outcome{Skip: p.NoHost}, false
	}
	return p, p.HTTPS, engine.Outcome{}, true
}

// request is what every HTTPS check asks an address: the same request, so the probe set
// answers LA401, LA402 and LA403 with one connection per address; linkSamples requests on it
// give LA403 its first-byte samples.
func (p *Path) request(t Target) probe.HTTPSRequest {
	return probe.HTTPSRequest{Addr: t.Addr, Host: p.Host.Name, Requests: linkSamples}
}

// httpsEvidence is what a reply says, for findings and the summary.
func httpsEvidence(r *probe.HTTPSReply) map[string]any {
	return map[string]any{
		"status":         r.Status,
		"location":       r.Location,
		"server":         r.Server,
		"certSubject":    r.TLS.Subject,
		"certIssuer":     r.TLS.Issuer,
		"certDNSNames":   append([]string{}, r.TLS.DNSNames...),
		"certNotAfter":   r.TLS.NotAfter.UTC().Format(time.RFC3339),
		"certDaysLeft":   r.TLS.DaysLeft,
		"certSHA256":     r.TLS.SHA256,
		"certVerified":   r.TLS.Verified,
		"certError":      r.TLS.VerifyError,
		"tlsVersion":     r.TLS.Version,
		"connectMs":      netMillis(r.Timings.Connect),
		"handshakeMs":    netMillis(r.Timings.Handshake),
		"firstByteMs":    netMillis(r.Timings.FirstByte),
		"traefikDefault": r.TLS.TraefikDefault,
	}
}

func netMillis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// DefaultExpectStatus is what a route behind forward-auth answers an anonymous visitor.
const DefaultExpectStatus = 302

// LocationRule is --expect-location: a host name (compared with the Location's host) or a
// regular expression (matched against the whole Location).
type LocationRule struct {
	raw  string
	host string
	re   *regexp.Regexp
}

var plainHost = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?$`)

// ParseLocationRule reads --expect-location: a host name, or a regular expression that
// compiles. The CLI parses it before any check runs.
func ParseLocationRule(s string) (LocationRule, error) {
	s = strings.TrimSpace(s)
	if s == "" || plainHost.MatchString(s) {
		return LocationRule{raw: s, host: strings.ToLower(s)}, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return LocationRule{}, fmt.Errorf("--expect-location %q is neither a host name nor a valid regular expression: %w", s, err)
	}
	return LocationRule{raw: s, re: re}, nil
}

func (l LocationRule) set() bool { return l.raw != "" }

// Raw is the rule as given ("" when none).
func (l LocationRule) Raw() string { return l.raw }

func (l LocationRule) matches(loc *url.URL, raw string) bool {
	if l.re != nil {
		return l.re.MatchString(raw)
	}
	if loc == nil {
		return false
	}
	if strings.Contains(l.host, ":") {
		return strings.EqualFold(loc.Host, l.host)
	}
	return strings.EqualFold(loc.Hostname(), l.host)
}

// sameHTTPURL reports a redirect to the very URL asked: a browser following it loops.
func sameHTTPURL(a, b *url.URL) bool {
	if a == nil || b == nil {
		return false
	}
	path := func(u *url.URL) string {
		if u.Path == "" {
			return "/"
		}
		return u.Path
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host) &&
		path(a) == path(b) && a.RawQuery == b.RawQuery
}
