package netpath

import (
	"fmt"
	"maps"
	"net/url"
	"sort"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Without --expect-location, LA401 judges a redirect's Location against what the probe host's
// route says of its forwardAuth (proxyroute.RedirectTargets):
//
//   - a Location on a name only the cluster's DNS answers (the forwardAuth address's own name,
//     NAME.NAMESPACE.svc..., the cluster domain, a single label) is a FAIL: no browser on the LAN
//     can follow it. The usual cause is Traefik's: it resolves a Location the auth server writes
//     as a path against the forwardAuth address (traefik/traefik v3.7.9
//     pkg/middlewares/auth/forward.go, redirectURL: http.Response.Location). The same holds for
//     an absolute URL in the Location's query that the identity provider sends the browser back
//     to (oauth2-proxy builds redirect_uri from the request's host unless --redirect-url names
//     one: oauthproxy.go getOAuthRedirectURI; under forwardAuth that host is the address's).
//   - a Location elsewhere than the derived hosts is a WARN, not a FAIL: an auth server may send
//     the browser straight to an identity provider that no cluster object names (oauth2-proxy
//     with --skip-provider-button redirects to the provider's own login URL), so a host outside
//     the derived set is a doubt, not a proof; --expect-location makes the judgement exact.
//   - when nothing can be derived, the Location is not judged, and the summary says so.

// judgeLocation judges the Location of a redirect answered by t.
func judgeLocation(t Target, p *Path, r *probe.HTTPSReply, ev map[string]any) []engine.Finding {
	if !isHTTPRedirect(r.Status) || r.LocationURL == nil {
		return nil
	}
	rt := p.Host.Redirect
	host := r.LocationURL.Hostname()
	if why := rt.Unresolvable(host); why != "" {
		return []engine.Finding{{
			Code: "LA401-LOCATION-INTERNAL", Severity: engine.SeverityFail, Object: t.Object, Evidence: ev,
			Message: fmt.Sprintf("%s redirects https://%s/ to %s, whose host %s is %s: no browser on the LAN can follow it.%s",
				t.Addr.Addr(), p.Host.Name, r.Location, host, why, rewriteCause(rt, r.LocationURL)),
			Remediation: internalLocationFix(p, rt, r.LocationURL),
		}}
	}
	if f, ok := internalReturn(t, p, r, ev); ok {
		return []engine.Finding{f}
	}
	if !rt.Judged() {
		return nil
	}
	if _, ok := rt.Expected(host); ok {
		return nil
	}
	return []engine.Finding{{
		Code: "LA401-LOCATION-UNEXPECTED", Severity: engine.SeverityWarn, Object: t.Object, Evidence: ev,
		Message: fmt.Sprintf("%s redirects https://%s/ to %s, whose host %s is none of those the route's forwardAuth names: %s. An auth server may send straight to an identity provider the cluster's objects do not name; if %s is that provider, say so with --expect-location",
			t.Addr.Addr(), p.Host.Name, r.Location, host, rt.HostList(), host),
		Remediation: remedy.Commentf("# if %s is the identity provider, make the check exact:\n", host) +
			remedy.Command("kubectl", "lanaccess", "doctor", "--expect-location", host) +
			"\n# otherwise a middleware or the application itself redirects elsewhere; the route's middlewares:\n" +
			getMiddlewares(rt),
	}}
}

// internalReturn finds an absolute URL in the Location's query whose host only the cluster's
// DNS answers: the identity provider sends the browser there after sign-in.
func internalReturn(t Target, p *Path, r *probe.HTTPSReply, ev map[string]any) (engine.Finding, bool) {
	q := r.LocationURL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i >= 32 {
			break
		}
		for _, v := range q[k] {
			u, err := proxyroute.ParseAuthURL(v)
			if err != nil {
				continue
			}
			why := p.Host.Redirect.Unresolvable(u.Hostname())
			if why == "" {
				continue
			}
			return engine.Finding{
				Code: "LA401-RETURN-INTERNAL", Severity: engine.SeverityFail, Object: t.Object, Evidence: ev,
				Message: fmt.Sprintf("%s redirects https://%s/ to %s, whose %s= parameter sends the browser back to %s after sign-in; its host %s is %s: no browser on the LAN can follow it",
					t.Addr.Addr(), p.Host.Name, r.LocationURL.Host, k, v, u.Hostname(), why),
				Remediation: returnURLFix(p, k),
			}, true
		}
	}
	return engine.Finding{}, false
}

// rewriteCause explains a Location on the forwardAuth address's own scheme, host and port.
func rewriteCause(rt proxyroute.RedirectTargets, loc *url.URL) string {
	if rt.AddressURL == nil || !sameOrigin(rt.AddressURL, loc) {
		return ""
	}
	if rt.PreserveLocationHeader {
		return fmt.Sprintf(" It is the origin of Middleware %s's forwardAuth address (%s), and preserveLocationHeader passes the auth server's Location as written: the auth server names its own internal URL.",
			rt.Middleware, rt.Address)
	}
	return fmt.Sprintf(" It is the origin of Middleware %s's forwardAuth address (%s): Traefik resolves a Location that the auth server writes as a path against that address (traefik/traefik pkg/middlewares/auth/forward.go, redirectURL), unless the auth server named this URL itself.",
		rt.Middleware, rt.Address)
}

// internalLocationFix: a Kubernetes change when one is known to work (preserveLocationHeader
// with a route of the probe host to the auth server), and always the auth server's own setting,
// which doctor cannot prove.
func internalLocationFix(p *Path, rt proxyroute.RedirectTargets, loc *url.URL) string {
	var b strings.Builder
	rewritten := rt.AddressURL != nil && sameOrigin(rt.AddressURL, loc) && !rt.PreserveLocationHeader
	if rewritten && rt.PortalOnProbeHost {
		ns, name, _ := strings.Cut(rt.Middleware, "/")
		if old := tooOldToPreserve(rt); old != "" {
			b.WriteString(old)
		}
		b.WriteString(remedy.Commentf("# pass the auth server's Location as written (Traefik %s or later): the browser resolves it against https://%s/, whose route sends to Service %s:\n", preserveLocationSince, p.Host.Name, rt.Service))
		b.WriteString(remedy.MergePatch(ns, "middleware", name, PreserveLocationPatch()))
		b.WriteString("\n# or, instead, ")
	} else {
		b.WriteString("# ")
	}
	b.WriteString("give the auth server its public URL, so that it answers with an absolute Location on it (doctor does not read the auth server's configuration and cannot prove this fix):\n")
	b.WriteString("#   Authelia 4.38+: session.cookies[].authelia_url, or ?authelia_url=https://<portal>/ on the forwardAuth address (/api/verify: ?rd=https://<portal>/)\n")
	b.WriteString("#   oauth2-proxy: --redirect-url=https://<portal>/oauth2/callback, with --reverse-proxy so that it reads X-Forwarded-Host\n")
	if rewritten && !rt.PortalOnProbeHost && rt.Middleware != "" {
		b.WriteString(remedy.Commentf("# preserveLocationHeader: true on Middleware %s would pass a path as written, which the browser resolves against https://%s/: right only once a route of %s sends that path to the auth server, and none does\n",
			rt.Middleware, p.Host.Name, p.Host.Name))
	}
	b.WriteString(remedy.Command("kubectl", "lanaccess", "doctor", "--only", "LA401"))
	return b.String()
}

// preserveLocationSince is the first Traefik release with forwardAuth's preserveLocationHeader
// (traefik/traefik CHANGELOG.md, v3.3.0: "Add an option to preserve the ForwardAuth Server
// Location header", #11318). An older Traefik ignores the field, and the CRDs of its release
// do not have it, so the API server refuses or prunes the patch.
const preserveLocationSince = "v3.3.0"

// tooOldToPreserve says, when the proxy's image names a Traefik older than
// preserveLocationSince, that the patch needs an upgrade first ("" otherwise).
func tooOldToPreserve(rt proxyroute.RedirectTargets) string {
	if rt.ProxyVersion == "" || semver.Compare(rt.ProxyVersion, preserveLocationSince) >= 0 {
		return ""
	}
	return remedy.Commentf("# the proxy runs Traefik %s (image %s), which has no preserveLocationHeader: upgrade Traefik and its CRDs to %s or later first, or the patch below is refused or does nothing\n",
		rt.ProxyVersion, rt.ProxyImage, preserveLocationSince)
}

// PreserveLocationPatch is the merge patch that makes Traefik pass the auth server's Location
// as written (the Middleware CRD's spec.forwardAuth.preserveLocationHeader, Traefik v3.3+).
func PreserveLocationPatch() map[string]any {
	return map[string]any{"spec": map[string]any{"forwardAuth": map[string]any{"preserveLocationHeader": true}}}
}

func returnURLFix(p *Path, param string) string {
	return remedy.Commentf("# the auth server builds the %s= URL from the host it is asked on, which under forwardAuth is the forwardAuth address's; give it its public callback (doctor does not read the auth server's configuration and cannot prove this fix):\n"+
		"#   oauth2-proxy: --redirect-url=https://<portal>/oauth2/callback (or --reverse-proxy, so that it uses X-Forwarded-Host: https://%s/oauth2/callback then needs a route)\n", param, p.Host.Name) +
		"#   Authelia 4.38+: session.cookies[].authelia_url\n" +
		remedy.Command("kubectl", "lanaccess", "doctor", "--only", "LA401")
}

// sameOrigin compares scheme, host and port (the scheme's default port when none is written),
// as Go's URL resolution keeps them from the base.
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// getMiddlewares lists the forwardAuth's Middleware's namespace's Middlewares (every
// namespace's when it is not known).
func getMiddlewares(rt proxyroute.RedirectTargets) string {
	if ns, _, ok := strings.Cut(rt.Middleware, "/"); ok && ns != "" {
		return remedy.Kubectl(ns, "get", "middleware", "-o", "yaml")
	}
	return remedy.Command("kubectl", "get", "middleware", "-A", "-o", "yaml")
}

// withRedirect is ev with the derivation of the expected Location, for the address's findings.
func withRedirect(ev map[string]any, rt proxyroute.RedirectTargets) map[string]any {
	out := make(map[string]any, len(ev)+1)
	maps.Copy(out, ev)
	out["redirect"] = rt.Evidence()
	return out
}

// locationNote says, in the summary, how the Location was judged.
func locationNote(rule LocationRule, rt proxyroute.RedirectTargets) string {
	switch {
	case rule.set():
		return ", Location matching " + rule.raw
	case rt.Judged():
		return ", Location on " + rt.HostList()
	}
	return "; the Location was not judged: " + rt.Why + " (--expect-location judges it)"
}
