package proxyroute

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// authRoute is an IngressRoute route of host in ns sending to Service backend (namespace
// written when backendNS is not ""), with middlewares of its namespace.
func authRoute(ns, name, match, backend, backendNS string, middlewares ...string) unstructured.Unstructured {
	ir := testIngressRoute(ns, name, match, middlewares...)
	svc := map[string]any{"name": backend, "port": int64(80)}
	if backendNS != "" {
		svc["namespace"] = backendNS
	}
	ir.Object["spec"].(map[string]any)["routes"].([]any)[0].(map[string]any)["services"] = []any{svc}
	return ir
}

func clusterService(ns, name string) corev1.Service {
	return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// redirectSetup: Traefik as the chart renders it, grafana behind Middleware monitoring/sso
// whose forwardAuth is fa, and whatever mutate adds.
func redirectSetup(fa map[string]any, mutate ...func(*Setup)) *Setup {
	return proxySetup(chart41Args, append([]func(*Setup){func(s *builder) {
		s.Middlewares = []unstructured.Unstructured{testMiddleware("monitoring", "sso", map[string]any{"forwardAuth": fa})}
		s.IngressRoutes = []unstructured.Unstructured{authRoute("monitoring", "grafana", "Host(`grafana.apps.example.com`)", "grafana", "", "sso")}
		s.Services = append(s.Services, clusterService("auth", "authelia"), clusterService("monitoring", "grafana"))
		s.ProxyService = &s.Services[0]
	}}, mutate...)...)
}

func addr(a string) map[string]any { return map[string]any{"address": a} }

func withRoutes(routes ...unstructured.Unstructured) func(*Setup) {
	return func(s *builder) { s.IngressRoutes = append(s.IngressRoutes, routes...) }
}

func TestRedirectTargetsAreDerivedFromTheRoutesForwardAuth(t *testing.T) {
	authPortal := authRoute("auth", "authelia", "Host(`auth.example.com`)", "authelia", "")
	tests := []struct {
		name       string
		fa         map[string]any
		mutate     []func(*Setup)
		want       []RedirectHost
		service    string
		internal   string // a part of Internal
		why        string // a part of Why, when nothing is derived
		portalHere bool
	}{
		{
			name: "an address on a public name is where a path of the auth server lands",
			fa:   addr("https://auth.example.com/api/verify"),
			want: []RedirectHost{{"auth.example.com", "the forwardAuth address of Middleware monitoring/sso"}},
		},
		{
			name:     "Authelia's rd= in the address names its portal; the internal address does not count",
			fa:       addr("http://authelia.auth.svc.cluster.local:9091/api/verify?rd=https://login.example.com/"),
			want:     []RedirectHost{{"login.example.com", "the rd= parameter of the forwardAuth address of Middleware monitoring/sso"}},
			service:  "auth/authelia",
			internal: "Service auth/authelia",
		},
		{
			name:    "authelia_url= in the address names the portal too",
			fa:      addr("http://authelia.auth.svc:9091/api/authz/forward-auth?authelia_url=https%3A%2F%2Fauth.example.com%2F"),
			want:    []RedirectHost{{"auth.example.com", "the authelia_url= parameter of the forwardAuth address of Middleware monitoring/sso"}},
			service: "auth/authelia",
		},
		{
			name:    "an address on a Service names the hosts of the routes to that Service (any port, name.namespace form)",
			fa:      addr("http://authelia.auth:9091/api/authz/forward-auth"),
			mutate:  []func(*Setup){withRoutes(authPortal)},
			want:    []RedirectHost{{"auth.example.com", "IngressRoute auth/authelia, whose backend is Service auth/authelia, the forwardAuth address's"}},
			service: "auth/authelia",
		},
		{
			name: "a single-label address is a Service of Traefik's own namespace",
			fa:   addr("http://sso/verify"),
			mutate: []func(*Setup){withRoutes(authRoute("traefik", "sso", "Host(`sso.example.com`)", "sso", "")), func(s *builder) {
				s.Services = append(s.Services, clusterService("traefik", "sso"))
			}},
			want:    []RedirectHost{{"sso.example.com", "IngressRoute traefik/sso, whose backend is Service traefik/sso, the forwardAuth address's"}},
			service: "traefik/sso",
		},
		{
			name:    "another cluster domain is read from the address",
			fa:      addr("http://authelia.auth.svc.k8s.internal/api/verify"),
			mutate:  []func(*Setup){withRoutes(authPortal)},
			want:    []RedirectHost{{"auth.example.com", "IngressRoute auth/authelia, whose backend is Service auth/authelia, the forwardAuth address's"}},
			service: "auth/authelia",
		},
		{
			name: "an Ingress and an HTTPRoute sending to the Service are portals too",
			fa:   addr("http://authelia.auth.svc.cluster.local/api/verify"),
			mutate: []func(*Setup){func(s *builder) {
				traefik := "traefik"
				ing := testIngress("auth", "portal", "login.example.com", &traefik, nil)
				ing.Spec.Rules[0].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "authelia"}}}}}
				s.Ingresses = []networkingv1.Ingress{ing}
			}},
			want:    []RedirectHost{{"login.example.com", "Ingress auth/portal, whose backend is Service auth/authelia, the forwardAuth address's"}},
			service: "auth/authelia",
		},
		{
			name: "a route Traefik refuses (its Service is in another namespace, allowCrossNamespace off) is no portal",
			fa:   addr("http://authelia.auth.svc.cluster.local/api/verify"),
			mutate: []func(*Setup){withRoutes(authRoute("web", "portal", "Host(`auth.example.com`)", "authelia", "auth"),
				authRoute("auth", "other", "Host(`other.example.com`)", "other", ""))},
			service: "auth/authelia",
			why:     "names Service auth/authelia, which no route the proxy serves has as its backend",
		},
		{
			name: "a route of the probe host itself to the auth Service makes a kept path land on the auth server",
			fa:   addr("http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth"),
			mutate: []func(*Setup){withRoutes(authRoute("auth", "oauth2", "Host(`grafana.apps.example.com`) && PathPrefix(`/oauth2/`)", "oauth2-proxy", "")), func(s *builder) {
				s.Services = append(s.Services, clusterService("auth", "oauth2-proxy"))
			}},
			want:       []RedirectHost{{"grafana.apps.example.com", "IngressRoute auth/oauth2, whose backend is Service auth/oauth2-proxy, the forwardAuth address's"}},
			service:    "auth/oauth2-proxy",
			portalHere: true,
		},
		{
			name:    "authSigninURL: its host, or the probe host for a path",
			fa:      map[string]any{"address": "http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth", "authSigninURL": "https://sso.example.com/oauth2/start"},
			want:    []RedirectHost{{"sso.example.com", "authSigninURL of Middleware monitoring/sso"}},
			service: "auth/oauth2-proxy",
		},
		{
			name:    "a relative authSigninURL is a path on the probe host",
			fa:      map[string]any{"address": "http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth", "authSigninURL": "/oauth2/sign_in"},
			want:    []RedirectHost{{"grafana.apps.example.com", "authSigninURL of Middleware monitoring/sso, a path on the probe host"}},
			service: "auth/oauth2-proxy",
		},
		{
			name:    "an internal Service with no route to it and no URL: nothing is derived, and why is said",
			fa:      addr("http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth"),
			service: "auth/oauth2-proxy",
			why:     "the auth server's public name is not in the cluster's objects",
		},
		{
			name: "an IP address names nothing",
			fa:   addr("http://10.96.0.40:9091/api/verify"),
			why:  "is on the IP address 10.96.0.40",
		},
		{
			name: "an address that is not an http(s) URL is said so",
			fa:   addr("authelia:9091/api/verify"),
			why:  "does not read as an http(s) URL",
		},
		{
			name: "a hostile address is bounded and refused",
			fa:   addr("http://" + strings.Repeat("a", 3000) + ".example.com/"),
			why:  "longer than 2048 bytes",
		},
		{
			name: "a host with a shell metacharacter is no host",
			fa:   addr("http://auth.example.com;id/"),
			why:  "does not read as an http(s) URL",
		},
		{
			name: "NAME.NAMESPACE of a namespace of the cluster is a Service",
			fa:   addr("http://sso.auth/verify"),
			mutate: []func(*Setup){func(s *builder) {
				s.Namespaces = []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "auth"}}}
			}},
			service: "auth/sso",
			why:     "names Service auth/sso",
		},
		{
			name: "two labels of no namespace are a public name once the namespaces are known",
			fa:   addr("https://example.com/verify"),
			mutate: []func(*Setup){func(s *builder) {
				s.Namespaces = []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "auth"}}}
			}},
			want: []RedirectHost{{"example.com", "the forwardAuth address of Middleware monitoring/sso"}},
		},
		{
			name: "two labels cannot be told without the namespaces",
			fa:   addr("https://example.com/verify"),
			why:  "may be a Service's NAME.NAMESPACE (the namespaces could not be read)",
		},
		{
			name: "a query URL on an internal name is not expected",
			fa:   addr("https://auth.example.com/api/verify?rd=http://authelia.auth.svc.cluster.local/"),
			want: []RedirectHost{{"auth.example.com", "the forwardAuth address of Middleware monitoring/sso"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := redirectSetup(tc.fa, tc.mutate...)
			s.DeriveModels("")
			require.Equal(t, "grafana.apps.example.com", s.ProbeHost.Name)
			rt := s.ProbeHost.Redirect
			assert.Equal(t, "monitoring/sso", rt.Middleware)
			assert.Equal(t, tc.want, rt.Hosts)
			assert.Equal(t, tc.service, rt.Service)
			assert.Contains(t, rt.Internal, tc.internal)
			assert.Equal(t, tc.portalHere, rt.PortalOnProbeHost)
			if tc.why != "" {
				assert.False(t, rt.Judged())
				assert.Contains(t, rt.Why, tc.why)
			} else {
				assert.True(t, rt.Judged())
				assert.Empty(t, rt.Why)
			}
			assert.LessOrEqual(t, len(rt.Address), 2048)
		})
	}
}

func TestRedirectTargetsSayWhyWithoutAForwardAuth(t *testing.T) {
	s := redirectSetup(addr("https://auth.example.com/"), func(s *builder) {
		s.Middlewares = []unstructured.Unstructured{testMiddleware("monitoring", "sso", map[string]any{"basicAuth": map[string]any{"secret": "users"}})}
	})
	s.DeriveModels("")
	assert.False(t, s.ProbeHost.Redirect.Judged())
	assert.Contains(t, s.ProbeHost.Redirect.Why, "its route (IngressRoute monitoring/grafana) has no forwardAuth middleware")

	s.DeriveModels("wiki.apps.example.com")
	assert.Contains(t, s.ProbeHost.Redirect.Why, "no route the proxy serves names wiki.apps.example.com")
}

func TestRedirectTargetsFollowAChainToItsForwardAuthAndItsOptions(t *testing.T) {
	s := redirectSetup(addr("unused"), func(s *builder) {
		s.Middlewares = []unstructured.Unstructured{
			testMiddleware("monitoring", "sso", map[string]any{"chain": map[string]any{"middlewares": []any{map[string]any{"name": "authelia"}}}}),
			testMiddleware("monitoring", "authelia", map[string]any{"forwardAuth": map[string]any{
				"address": "https://auth.example.com/api/verify", "preserveLocationHeader": true}}),
		}
	})
	s.DeriveModels("")
	rt := s.ProbeHost.Redirect
	assert.Equal(t, "monitoring/authelia", rt.Middleware, "the Middleware that holds the forwardAuth, not the chain")
	assert.True(t, rt.PreserveLocationHeader)
	assert.Equal(t, "https://auth.example.com/api/verify", s.ProbeHost.ForwardAuth)
}

func TestUnresolvableNamesOnlyWhatOnlyTheClusterDNSAnswers(t *testing.T) {
	s := redirectSetup(addr("http://authelia.auth.svc.k8s.internal:9091/api/verify"))
	s.DeriveModels("")
	rt := s.ProbeHost.Redirect
	for host, why := range map[string]string{
		"authelia.auth.svc.k8s.internal":   "Service auth/authelia",
		"AUTHELIA.auth.svc.k8s.internal.":  "Service auth/authelia",
		"other.web.svc":                    "Service web/other",
		"other.web.svc.k8s.internal":       "Service web/other",
		"other.web.svc.cluster.local":      "Service web/other",
		"10-244-1-5.web.pod.cluster.local": "the cluster's DNS domain",
		"portal.k8s.internal":              "the cluster's DNS domain",
		"authelia":                         "single-label",
		"authelia.auth":                    "short name of Service auth/authelia",
	} {
		assert.Contains(t, rt.Unresolvable(host), why, host)
	}
	for _, host := range []string{"auth.example.com", "grafana.apps.example.com", "10.96.0.10", "::1", "localhost",
		"api.prod.svc.example.com", "nothing.here", "", "a;b"} {
		assert.Empty(t, rt.Unresolvable(host), host)
	}
}

// FuzzRedirectTargets: whatever a Middleware's address holds, derivation neither panics nor
// keeps more than it bounds, and every host it expects is a valid DNS name a browser may
// resolve.
func FuzzRedirectTargets(f *testing.F) {
	for _, a := range []string{
		"http://authelia.auth.svc.cluster.local:9091/api/verify?rd=https://auth.example.com/",
		"https://auth.example.com/", "http://sso/verify", "http://[::1]:80/", "http://a..b/", "http://x/?rd=http://%zz",
		"http://authelia.auth/api?authelia_url=https%3A%2F%2Fauth.example.com%2F&rd=javascript:alert(1)", "\x00", "http://é.example/",
	} {
		f.Add(a, "/oauth2/sign_in")
	}
	f.Fuzz(func(t *testing.T, address, signin string) {
		s := redirectSetup(map[string]any{"address": address, "authSigninURL": signin}, withRoutes(authRoute("auth", "authelia", "Host(`auth.example.com`)", "authelia", "")))
		s.DeriveModels("")
		rt := s.ProbeHost.Redirect
		assert.LessOrEqual(t, len(rt.Address), maxAuthURL)
		assert.LessOrEqual(t, len(rt.Hosts), maxRedirectHosts)
		assert.Equal(t, len(rt.Hosts) == 0, rt.Why != "", "either hosts or why")
		for _, h := range rt.Hosts {
			require.NoError(t, valid.Hostname(h.Host), "%q from %q", h.Host, address)
			assert.Empty(t, rt.Unresolvable(h.Host), "%q from %q", h.Host, address)
			assert.Equal(t, strings.ToLower(h.Host), h.Host)
		}
		if u, err := ParseAuthURL(address); err == nil {
			assert.True(t, u.Scheme == "http" || u.Scheme == "https")
			assert.NotEmpty(t, u.Hostname())
		}
	})
}
