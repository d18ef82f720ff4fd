package proxyroute

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// Where the probe host's anonymous redirect may legitimately point. A route behind forwardAuth
// answers an anonymous browser with its auth server's answer as Traefik passes it on
// (ForwardAuth): a Location the auth server writes as a path is resolved against the
// forwardAuth address, so an address on a cluster-internal name turns it into a URL no LAN
// browser can follow. Without --expect-location, LA401 judges the Location against what the
// route's own objects say: the address's host when a browser can resolve it, the absolute URLs
// the address carries in its query (Authelia's rd= and authelia_url=), authSigninURL, and, when
// the address names a cluster Service, the hosts of the proxy's routes to that Service (the
// public portal of the same auth server).

const (
	// maxAuthURL bounds an address or URL read from the cluster before it is parsed.
	maxAuthURL = 2048
	// maxQueryValues bounds the query values of an address that are read as URLs.
	maxQueryValues = 32
	// maxRedirectHosts bounds the expected hosts kept.
	maxRedirectHosts = 32
	// defaultClusterDomain is kubelet's --cluster-domain default, the one kubeadm and k3s use.
	defaultClusterDomain = "cluster.local"
)

// RedirectHost is one host the redirect may point at, and where it was learnt.
type RedirectHost struct {
	Host   string
	Origin string
}

// RedirectTargets is what the probe host's redirect may legitimately point at, derived from its
// route's forwardAuth (Setup.redirectTargets).
type RedirectTargets struct {
	// Middleware is the forwardAuth's Middleware ("namespace/name"), "" when the probe host's
	// route has none; Address its address (at most maxAuthURL bytes are read).
	Middleware string
	Address    string
	// AddressURL is the address parsed (nil when it does not read); AddressHost its host, lower
	// case, without port or trailing dot.
	AddressURL  *url.URL
	AddressHost string
	// Service is the cluster Service the address names ("namespace/name"), "" when none.
	Service string
	// Internal says why a LAN browser cannot resolve AddressHost ("" when it may, or when it is
	// an IP address).
	Internal string
	// PreserveLocationHeader: Traefik passes the auth server's Location as written.
	PreserveLocationHeader bool
	// Hosts are the expected hosts, each with its origin; Why says why there are none.
	Hosts []RedirectHost
	Why   string
	// PortalOnProbeHost: a served route of the probe host itself sends to Service, so a path
	// kept as written (preserveLocationHeader) reaches the auth server on the probe host.
	PortalOnProbeHost bool
	// ProxyImage is the proxy's Traefik image, ProxyVersion the version its tag names ("" when
	// none): which forwardAuth options that Traefik has.
	ProxyImage   string
	ProxyVersion string

	// clusterDomain is the cluster's DNS domain (learnt from the address, else the default);
	// shortNames are "name.namespace" of the cluster's Services, with the Service they name.
	clusterDomain string
	shortNames    map[string]string
	// unsure says why the address's host is neither expected nor internal.
	unsure string
}

// Judged reports whether the Location can be judged: some host was derived.
func (t RedirectTargets) Judged() bool { return len(t.Hosts) > 0 }

// Expected returns the derived host host is, if any (compared without case or trailing dot).
func (t RedirectTargets) Expected(host string) (RedirectHost, bool) {
	h := normalHost(host)
	for _, e := range t.Hosts {
		if e.Host == h {
			return e, true
		}
	}
	return RedirectHost{}, false
}

// HostList is "auth.example.com (the forwardAuth address of Middleware auth/sso), ...".
func (t RedirectTargets) HostList() string {
	parts := make([]string, 0, len(t.Hosts))
	for _, h := range t.Hosts {
		parts = append(parts, h.Host+" ("+h.Origin+")")
	}
	return strings.Join(parts, ", ")
}

// Unresolvable says why a LAN browser cannot resolve host ("" when it may, or cannot be told):
// a name only the cluster's DNS answers. An IP address is not judged here.
func (t RedirectTargets) Unresolvable(host string) string {
	h := normalHost(host)
	if h == "" || isIPHost(h) || valid.Hostname(h) != nil {
		return ""
	}
	domain := t.clusterDomain
	if domain == "" {
		domain = defaultClusterDomain
	}
	labels := strings.Split(h, ".")
	switch {
	case h == t.AddressHost && t.Internal != "":
		return t.Internal
	case len(labels) == 1 && h != "localhost":
		return "a single-label name, which only a resolver's search list completes (inside the cluster, the pod's namespace.svc." + domain + ")"
	case len(labels) >= 3 && labels[2] == "svc" && slices.Contains([]string{"", domain, defaultClusterDomain}, strings.Join(labels[3:], ".")):
		return fmt.Sprintf("the cluster-internal name of Service %s/%s, which only the cluster's DNS answers", labels[1], labels[0])
	case strings.HasSuffix(h, "."+domain), strings.HasSuffix(h, "."+defaultClusterDomain):
		return "a name in the cluster's DNS domain, which only the cluster's DNS answers"
	}
	if svc, ok := t.shortNames[h]; ok {
		return "the short name of " + svc + ", which only a pod's DNS search list completes"
	}
	return ""
}

// Evidence is what findings show of the derivation.
func (t RedirectTargets) Evidence() map[string]any {
	hosts := make([]map[string]string, 0, len(t.Hosts))
	for _, h := range t.Hosts {
		hosts = append(hosts, map[string]string{"host": h.Host, "origin": h.Origin})
	}
	ev := map[string]any{"expectedHosts": hosts}
	if t.Middleware != "" {
		ev["middleware"] = t.Middleware
		ev["forwardAuthAddress"] = t.Address
		ev["preserveLocationHeader"] = t.PreserveLocationHeader
	}
	if t.Service != "" {
		ev["forwardAuthService"] = t.Service
	}
	if t.Internal != "" {
		ev["forwardAuthInternal"] = t.Internal
	}
	if t.Why != "" {
		ev["notDerived"] = t.Why
	}
	return ev
}

// ParseAuthURL reads an address or URL of a forwardAuth middleware: at most maxAuthURL bytes,
// an absolute http or https URL whose host is an IP address or a DNS host name (Traefik's
// http.NewRequest refuses anything else, and the client answers 500).
func ParseAuthURL(raw string) (*url.URL, error) {
	if len(raw) > maxAuthURL {
		return nil, fmt.Errorf("longer than %d bytes", maxAuthURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("not an http or https URL")
	}
	h := normalHost(u.Hostname())
	if h == "" {
		return nil, fmt.Errorf("no host")
	}
	if !isIPHost(h) {
		if err := valid.Hostname(h); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// redirectTargets derives where the probe host's redirect may point from its route's
// forwardAuth: the address's host when a browser can resolve it; the hosts of absolute http(s)
// URLs in the address's query; authSigninURL's host; and, when the address names a cluster
// Service (name, name.namespace, name.namespace.svc, name.namespace.svc.<cluster domain>, any
// port), the hosts of the served routes whose backend is that Service.
func (s *builder) redirectTargets(ph ProbeHost) RedirectTargets {
	t := RedirectTargets{clusterDomain: defaultClusterDomain, shortNames: s.serviceShortNames(),
		ProxyImage: s.Traefik.Image, ProxyVersion: s.Traefik.Version()}
	fa := ph.Forward
	if fa == nil {
		if ph.Route == "" {
			t.Why = "no route the proxy serves names " + ph.Name + ", so no forwardAuth middleware tells where it redirects"
		} else {
			t.Why = "its route (" + ph.Route + ") has no forwardAuth middleware that tells where it redirects"
		}
		return t
	}
	t.Middleware, t.PreserveLocationHeader = fa.Middleware, fa.PreserveLocationHeader
	t.Address = fa.Address
	if len(t.Address) > maxAuthURL {
		t.Address = t.Address[:maxAuthURL]
	}
	ofAddress := "the forwardAuth address of Middleware " + fa.Middleware
	u, err := ParseAuthURL(fa.Address)
	if err != nil {
		t.Why = fmt.Sprintf("%s does not read as an http(s) URL (%v)", ofAddress, err)
		return t
	}
	t.AddressURL, t.AddressHost = u, normalHost(u.Hostname())
	twoLabels := strings.Count(t.AddressHost, ".") == 1
	if ns, name, domain, ok := serviceOf(t.AddressHost, s.proxyNamespace(), t.shortNames, s.namespaceNames()); ok {
		t.Service = ns + "/" + name
		if domain != "" {
			t.clusterDomain = domain
		}
		t.Internal = "the cluster-internal name of Service " + t.Service + " (the forwardAuth address's), which only the cluster's DNS answers"
	} else if why := t.Unresolvable(t.AddressHost); why != "" {
		t.Internal = why
	} else if twoLabels && len(s.Namespaces) == 0 {
		// NAME.NAMESPACE or a public name: without the namespaces, it cannot be told.
		t.unsure = fmt.Sprintf("%s is on %s, which may be a Service's NAME.NAMESPACE (the namespaces could not be read)", ofAddress, t.AddressHost)
	} else if !isIPHost(t.AddressHost) {
		t.add(t.AddressHost, ofAddress)
	}
	t.addQueryURLs(u, ofAddress)
	t.addSigninURL(fa, ph.Name)
	if t.Service != "" {
		t.addPortals(s.Routes, ph.Name)
	}
	if len(t.Hosts) == 0 {
		t.Why = t.notDerived(ofAddress)
	}
	return t
}

// addQueryURLs adds the hosts of the absolute http(s) URLs among the address's query values
// (Authelia: /api/verify?rd=PORTAL, /api/authz/forward-auth?authelia_url=PORTAL).
func (t *RedirectTargets) addQueryURLs(u *url.URL, ofAddress string) {
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := 0
	for _, k := range keys {
		for _, v := range q[k] {
			if n++; n > maxQueryValues {
				return
			}
			qu, err := ParseAuthURL(v)
			if err != nil {
				continue
			}
			h := normalHost(qu.Hostname())
			if !isIPHost(h) && t.Unresolvable(h) == "" {
				t.add(h, "the "+k+"= parameter of "+ofAddress)
			}
		}
	}
}

// addSigninURL adds authSigninURL's host: Traefik answers a 401 of the auth server with a
// redirect to it (http.Redirect, which keeps an absolute URL and resolves a path against the
// request, i.e. the probe host).
func (t *RedirectTargets) addSigninURL(fa *ForwardAuth, probeHost string) {
	if fa.AuthSigninURL == "" || len(fa.AuthSigninURL) > maxAuthURL {
		return
	}
	origin := "authSigninURL of Middleware " + fa.Middleware
	if u, err := ParseAuthURL(fa.AuthSigninURL); err == nil {
		if h := normalHost(u.Hostname()); !isIPHost(h) && t.Unresolvable(h) == "" {
			t.add(h, origin)
		}
		return
	}
	if u, err := url.Parse(fa.AuthSigninURL); err == nil && u.Scheme == "" && u.Host == "" && strings.HasPrefix(u.Path, "/") {
		t.add(probeHost, origin+", a path on the probe host")
	}
}

// addPortals adds the hosts of the served routes whose backend is the address's Service.
func (t *RedirectTargets) addPortals(routes []Route, probeHost string) {
	ns, name, _ := strings.Cut(t.Service, "/")
	for _, r := range routes {
		if !r.Served || r.NotServed != "" || !slices.ContainsFunc(r.Backends, func(b Backend) bool { return b.IsService(ns, name) }) {
			continue
		}
		for _, h := range r.Hosts {
			if h == "" || strings.Contains(h, "*") || valid.Hostname(h) != nil {
				continue
			}
			t.add(h, r.Object+", whose backend is Service "+t.Service+", the forwardAuth address's")
			if h == normalHost(probeHost) {
				t.PortalOnProbeHost = true
			}
		}
	}
}

func (t *RedirectTargets) notDerived(ofAddress string) string {
	switch {
	case t.unsure != "":
		return t.unsure + ", and carries no URL in its query"
	case t.Service != "":
		return fmt.Sprintf("%s names Service %s, which no route the proxy serves has as its backend, and carries no URL in its query: the auth server's public name is not in the cluster's objects", ofAddress, t.Service)
	case t.Internal != "":
		return fmt.Sprintf("%s is on %s (%s), and carries no URL in its query", ofAddress, t.AddressHost, t.Internal)
	default:
		return fmt.Sprintf("%s is on the IP address %s, not a name, and carries no URL in its query", ofAddress, t.AddressHost)
	}
}

func (t *RedirectTargets) add(host, origin string) {
	host = normalHost(host)
	if host == "" || len(t.Hosts) >= maxRedirectHosts {
		return
	}
	if _, ok := t.Expected(host); !ok {
		t.Hosts = append(t.Hosts, RedirectHost{Host: host, Origin: origin})
	}
}

// serviceOf reads host as a cluster Service's DNS name, as the Traefik pod's resolver completes
// it (its search list: NAMESPACE.svc.DOMAIN svc.DOMAIN DOMAIN): "name" in Traefik's own
// namespace (proxyNamespace), "name.namespace" when that Service is known (shortNames) or
// namespace is one of the cluster's, "name.namespace.svc" and "name.namespace.svc.DOMAIN".
// domain is "" when the name does not give it.
func serviceOf(host, proxyNamespace string, shortNames map[string]string, namespaces []string) (ns, name, domain string, ok bool) {
	labels := strings.Split(host, ".")
	switch {
	case isIPHost(host):
		return "", "", "", false
	case len(labels) == 1:
		ns, name = proxyNamespace, labels[0]
		ok = ns != "" && host != "localhost"
	case len(labels) == 2:
		_, known := shortNames[host]
		name, ns, ok = labels[0], labels[1], known || slices.Contains(namespaces, labels[1])
	case labels[2] == "svc":
		name, ns, domain, ok = labels[0], labels[1], strings.Join(labels[3:], "."), true
	}
	if !ok || len(validation.IsDNS1035Label(name)) > 0 || len(validation.IsDNS1123Label(ns)) > 0 {
		return "", "", "", false
	}
	return ns, name, domain, true
}

// proxyNamespace is the namespace of the Traefik pods, whose search list completes a
// single-label address ("" when not known).
func (s *builder) proxyNamespace() string {
	switch {
	case s.ProxyWorkload != nil:
		return s.ProxyWorkload.Namespace
	case len(s.ProxyPods) > 0:
		return s.ProxyPods[0].Namespace
	case s.ProxyService != nil:
		return s.ProxyService.Namespace
	}
	return ""
}

// serviceShortNames maps "name.namespace" of the Services known to discovery (those that claim
// an address, and the routes' backends) to "Service namespace/name".
func (s *builder) serviceShortNames() map[string]string {
	out := make(map[string]string, len(s.Services))
	for _, svc := range s.Services {
		out[svc.Name+"."+svc.Namespace] = kubeobj.ServiceRef(&svc)
	}
	for _, r := range s.Routes {
		for _, b := range r.Backends {
			if b.Kind == "Service" && b.Namespace != "" {
				out[b.Name+"."+b.Namespace] = kubeobj.Ref("Service", b.Namespace, b.Name)
			}
		}
	}
	return out
}

// namespaceNames are the cluster's namespaces, when discovery could read them.
func (s *builder) namespaceNames() []string {
	out := make([]string, 0, len(s.Namespaces))
	for _, n := range s.Namespaces {
		out = append(out, n.Name)
	}
	return out
}

func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func isIPHost(h string) bool {
	_, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil
}
