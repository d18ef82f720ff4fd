package checks

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
type httpsPath struct {
	targets []netTarget
	host    probeHost
	service string
}

func newHTTPSPath(env *Env) (*httpsPath, engine.Outcome, bool) {
	if env.Probes == nil {
		return nil, engine.Outcome{Err: errNoProbes}, false
	}
	if env.Setup == nil || env.Setup.ProxyService == nil {
		return nil, engine.Outcome{Skip: "no proxy Service was found (name it with --proxy-service)"}, false
	}
	svc := env.Setup.ProxyService
	targets, _ := netServiceTargets(svc, netServicePort(svc, 443, "websecure", "https"), env.Setup.Nodes)
	if len(targets) == 0 {
		return nil, engine.Outcome{Skip: netServiceObject(svc) + " has no valid externalIPs: no address to dial (see LA101)"}, false
	}
	host := chooseProbeHost(env)
	if host.Name == "" {
		return nil, engine.Outcome{Skip: "no probe host: the zone is not known and --host was not given"}, false
	}
	return &httpsPath{targets: targets, host: host, service: netServiceObject(svc)}, engine.Outcome{}, true
}

// request is what every HTTPS check asks an address: the same request, so the probe set
// answers LA401, LA402 and LA403 with one connection per address; linkSamples requests on it
// give LA403 its first-byte samples.
func (p *httpsPath) request(t netTarget) probe.HTTPSRequest {
	return probe.HTTPSRequest{Addr: t.Addr, Host: p.host.Name, Requests: linkSamples}
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

// locationRule is --expect-location: a host name (compared with the Location's host) or a
// regular expression (matched against the whole Location).
type locationRule struct {
	raw  string
	host string
	re   *regexp.Regexp
}

var plainHost = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?$`)

// ValidateExpectLocation tells the CLI whether --expect-location is usable: a host name, or a
// regular expression that compiles.
func ValidateExpectLocation(s string) error {
	_, err := parseLocationRule(s)
	return err
}

func parseLocationRule(s string) (locationRule, error) {
	s = strings.TrimSpace(s)
	if s == "" || plainHost.MatchString(s) {
		return locationRule{raw: s, host: strings.ToLower(s)}, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return locationRule{}, fmt.Errorf("--expect-location %q is neither a host name nor a valid regular expression: %w", s, err)
	}
	return locationRule{raw: s, re: re}, nil
}

func (l locationRule) set() bool { return l.raw != "" }

func (l locationRule) matches(loc *url.URL, raw string) bool {
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
