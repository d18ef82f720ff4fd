package netpath

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// expirySoonDays is when a certificate's renewal should have happened already (cert-manager
// renews 30 days ahead by default, Let's Encrypt sends its last warning at 10 days).
const expirySoonDays = 14

// HTTPSAnswer is LA401: `curl --resolve HOST:443:ADDR https://HOST/` on every proxy address:
// the expected status (302) and Location (the identity provider), a certificate valid for the
// host and not about to expire, the same certificate on every address, and Traefik's default
// certificate recognised for what it means.
func HTTPSAnswer(env *Env) engine.Check {
	return catalogue.Check("LA401", func(ctx context.Context) engine.Outcome { return httpsAnswer(ctx, env) })
}

type httpsResult struct {
	reply *probe.HTTPSReply
	err   error
}

func httpsAnswer(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := httpsPath(env)
	if !ok {
		return out
	}
	rule := env.Options.ExpectLocation
	status := env.Options.ExpectStatus
	if status == 0 {
		status = DefaultExpectStatus
	}
	results := netEachTarget(ctx, targets, func(ctx context.Context, t Target) httpsResult {
		r, err := env.Probes.Get(ctx, p.request(t))
		return httpsResult{reply: r, err: err}
	})
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}
	var findings []engine.Finding
	answered := 0
	perAddr := map[string]any{}
	fingerprints := map[string]string{} // address -> leaf SHA-256
	for i, t := range targets {
		r := results[i]
		if r.err != nil {
			findings = append(findings, netUnreachable("LA401", t, "HTTPS "+p.Host.Name, r.err, p.hostEvidence(map[string]any{})))
			if !probe.IsNoAnswer(r.err) {
				answered++
			}
			continue
		}
		answered++
		ev := p.hostEvidence(httpsEvidence(r.reply))
		ev["address"] = t.Addr.String()
		perAddr[t.Addr.Addr().String()] = httpsEvidence(r.reply)
		fingerprints[t.Addr.Addr().String()] = r.reply.TLS.SHA256
		findings = append(findings, judgeCertificate(env, t, p, r.reply, ev)...)
		findings = append(findings, judgeAnswer(t, p, r.reply, status, rule, ev)...)
	}
	if answered == 0 {
		return engine.Outcome{Findings: findings, Err: netNoneAnswered(targets, env.Probes.Timeout())}
	}
	if f, differ := fingerprintsDiffer(p, fingerprints); differ {
		findings = append(findings, f)
	}
	findings = append(findings, engine.Finding{
		Code:     "LA401-SUMMARY",
		Severity: engine.SeverityInfo,
		Object:   p.ProxyObject,
		Message: fmt.Sprintf("%d of %d addresses answered https://%s/ (expected status %d%s)",
			len(perAddr), len(targets), p.Host.Name, status, locationNote(rule, p.Host.Redirect)),
		Evidence: p.hostEvidence(map[string]any{"answers": perAddr, "expectStatus": status, "expectLocation": rule.raw,
			"redirect": p.Host.Redirect.Evidence()}),
	})
	return engine.Outcome{Findings: findings}
}

func judgeCertificate(env *Env, t Target, p *Path, r *probe.HTTPSReply, ev map[string]any) []engine.Finding {
	c := r.TLS
	fail := func(code string, sev engine.Severity, msg, fix string) engine.Finding {
		return engine.Finding{Code: code, Severity: sev, Object: t.Object, Message: msg, Evidence: ev, Remediation: fix}
	}
	findRoute := "kubectl get ingressroute,ingress -A -o wide | " + remedy.Command("grep", "-F", p.Host.Name)
	switch {
	case c.TraefikDefault:
		// Traefik picks the certificate by the SNI name among every certificate it holds (its
		// routes' TLS Secrets, TLSStores), not by router, and serves its own self-signed one
		// only when none covers the name (traefik v3.7.9 pkg/tls/certificate_store.go
		// GetBestCertificate; proven in the lab: a host no router matches still gets a wildcard
		// another route loaded).
		return []engine.Finding{fail("LA401-DEFAULT-CERT", engine.SeverityFail,
			fmt.Sprintf("%s served Traefik's default certificate (CN %q) for %s: no certificate Traefik holds covers this host (it picks one by name among its routes' TLS Secrets, not by router), so Traefik fell back to its own self-signed certificate",
				t.Addr.Addr(), probe.TraefikDefaultCN, p.Host.Name),
			remedy.Commentf("# a TLS Secret that Traefik loads (a route's tls secretName that exists in the route's namespace, or a default TLSStore) must hold a certificate for %s; find the route and its Secret:\n", p.Host.Name)+findRoute)}
	case !c.HostMatches:
		return []engine.Finding{fail("LA401-CERT-HOST", engine.SeverityFail,
			fmt.Sprintf("%s served a certificate for %s that does not cover %s: browsers refuse it", t.Addr.Addr(), certNames(c), p.Host.Name),
			remedy.Commentf("# the route's TLS secret (or whatever serves port 443 on this address) must hold a certificate for %s:\n", p.Host.Name)+findRoute+
				"\n"+remedy.Command("openssl", "s_client", "-connect", t.Addr.String(), "-servername", p.Host.Name)+" </dev/null | openssl x509 -noout -subject -ext subjectAltName")}
	case c.Expired:
		return []engine.Finding{fail("LA401-CERT-EXPIRED", engine.SeverityFail,
			fmt.Sprintf("%s served a certificate for %s that is not valid now (valid until %s)", t.Addr.Addr(), p.Host.Name, c.NotAfter.UTC().Format(time.DateOnly)),
			"# renew the certificate (cert-manager: check the Certificate and its CertificateRequest):\nkubectl get certificate -A")}
	}
	var out []engine.Finding
	if c.Untrusted() {
		if env.Options.Insecure {
			out = append(out, fail("LA401-CERT-UNTRUSTED-ACCEPTED", engine.SeverityInfo,
				fmt.Sprintf("%s served a certificate this machine does not trust (%s); accepted because of --insecure", t.Addr.Addr(), c.VerifyError), ""))
		} else {
			out = append(out, fail("LA401-CERT-UNTRUSTED", engine.SeverityFail,
				fmt.Sprintf("%s served a certificate this machine does not trust: %s", t.Addr.Addr(), c.VerifyError),
				"# for a private CA, give its certificate (workstations need it installed too):\nkubectl lanaccess doctor --ca-file ca.pem\n# or accept it for this run only: --insecure"))
		}
	}
	if c.DaysLeft < expirySoonDays {
		out = append(out, fail("LA401-CERT-EXPIRING", engine.SeverityWarn,
			fmt.Sprintf("%s served a certificate for %s that expires in %d days (%s)", t.Addr.Addr(), p.Host.Name, c.DaysLeft, c.NotAfter.UTC().Format(time.DateOnly)),
			"# renewal should have happened by now; check the issuer:\nkubectl get certificate,certificaterequest -A"))
	}
	return out
}

func certNames(c probe.TLSInfo) string {
	if len(c.DNSNames) > 0 {
		return strings.Join(c.DNSNames, ", ")
	}
	return c.Subject
}

func judgeAnswer(t Target, p *Path, r *probe.HTTPSReply, status int, rule LocationRule, ev map[string]any) []engine.Finding {
	var out []engine.Finding
	fail := func(code, msg, fix string) {
		out = append(out, engine.Finding{Code: code, Severity: engine.SeverityFail, Object: t.Object, Message: msg, Evidence: ev, Remediation: fix})
	}
	reqURL := p.request(t).URL()
	if sameHTTPURL(r.LocationURL, reqURL) {
		fail("LA401-REDIRECT-LOOP", fmt.Sprintf("%s redirects https://%s/ to itself (%s): a browser following it loops", t.Addr.Addr(), p.Host.Name, r.Location),
			"# a redirect middleware or the identity provider's callback points back at the protected URL; check the route's middlewares:\n"+
				"kubectl get ingressroute -A -o yaml | "+remedy.Command("grep", "-B2", "-A8", "-F", p.Host.Name))
		return out
	}
	if r.Status != status {
		fail("LA401-STATUS", statusMessage(t, p.Host.Name, r.Status, status, r.Location), statusFix(r.Status, status, p.Host.Name))
	}
	switch {
	case rule.set() && isHTTPRedirect(r.Status) && !rule.matches(r.LocationURL, r.Location):
		fail("LA401-LOCATION", fmt.Sprintf("%s redirects to %q, which does not match --expect-location %s", t.Addr.Addr(), r.Location, rule.raw),
			"# the forward-auth middleware decides where anonymous visitors go; check its address:\nkubectl get middleware -A -o yaml")
	case !rule.set():
		out = append(out, judgeLocation(t, p, r, withRedirect(ev, p.Host.Redirect))...)
	}
	return out
}

func isHTTPRedirect(status int) bool { return status >= 300 && status < 400 }

func statusMessage(t Target, host string, got, want int, location string) string {
	base := fmt.Sprintf("%s answered %d %s for https://%s/ where %d was expected", t.Addr.Addr(), got, http.StatusText(got), host, want)
	switch {
	case got == http.StatusNotFound:
		return base + ": no router matched this host"
	case got >= 200 && got < 300 && isHTTPRedirect(want):
		return base + ": the page is served without a redirect to the identity provider, so the route has no authentication middleware"
	case isHTTPRedirect(got):
		return base + " (Location " + location + ")"
	case got >= 500:
		return base + ": the proxy reached no healthy backend"
	}
	return base
}

func statusFix(got, want int, host string) string {
	switch {
	case got >= 200 && got < 300 && isHTTPRedirect(want):
		return remedy.Comment("add the forward-auth middleware to the route, or, if "+host+" is public on purpose:") + "\n" +
			remedy.Command("kubectl", "lanaccess", "doctor", "--host", host, "--expect-status", strconv.Itoa(got))
	case got == http.StatusNotFound:
		return "kubectl get ingressroute,ingress -A -o wide | " + remedy.Command("grep", "-F", host)
	}
	return remedy.Comment("if this status is expected for "+host+":") + "\n" +
		remedy.Command("kubectl", "lanaccess", "doctor", "--host", host, "--expect-status", strconv.Itoa(got))
}

// fingerprintsDiffer says when addresses serve different certificates: a workstation's view then
// depends on the address it picked.
func fingerprintsDiffer(p *Path, fps map[string]string) (engine.Finding, bool) {
	distinct := map[string][]string{}
	for addr, fp := range fps {
		distinct[fp] = append(distinct[fp], addr)
	}
	if len(distinct) < 2 {
		return engine.Finding{}, false
	}
	var parts []string
	for fp, addrs := range distinct {
		sort.Strings(addrs)
		parts = append(parts, strings.Join(addrs, ", ")+" serve "+fp)
	}
	sort.Strings(parts)
	return engine.Finding{
		Code:     "LA401-CERTS-DIFFER",
		Severity: engine.SeverityWarn,
		Object:   p.ProxyObject,
		Message:  fmt.Sprintf("the addresses serve different certificates for %s: %s", p.Host.Name, strings.Join(parts, "; ")),
		Evidence: p.hostEvidence(map[string]any{"fingerprints": fps}),
		Remediation: "# every proxy replica must serve the same certificate; a replica that did not pick up a renewal keeps the old one:\n" +
			"kubectl get pods -A -o wide | grep -i traefik",
	}, true
}
