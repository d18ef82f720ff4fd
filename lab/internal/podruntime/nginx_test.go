package podruntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ingress(name string, ann map[string]string, host, secret string) *networkingv1.Ingress {
	class := "traefik"
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "monitoring", Annotations: ann}}
	ing.Spec.IngressClassName = &class
	ing.Spec.Rules = []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name}}}}}}}}
	if secret != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: secret}}
	}
	return ing
}

func TestRoutesFromIngressesReadTraefikAnnotations(t *testing.T) {
	routes := RoutesFromIngresses([]*networkingv1.Ingress{
		ingress("grafana", map[string]string{annMiddlewares: "traefik-forward-auth@kubernetescrd", annEntrypoints: "websecure"}, "grafana.apps.example.com", "apps-wildcard-tls"),
		ingress("hook", nil, "hook.apps.example.com", ""),
	}, "traefik")
	require.Len(t, routes, 2)
	g := routes[0]
	assert.Equal(t, "grafana.apps.example.com", g.Host)
	assert.True(t, g.ForwardAuth)
	assert.True(t, g.WebSecure)
	assert.False(t, g.Web)
	assert.Equal(t, "monitoring/apps-wildcard-tls", g.TLSSecret)
	h := routes[1]
	assert.False(t, h.ForwardAuth)
	assert.True(t, h.Web && h.WebSecure, "without the entrypoints annotation Traefik serves both")
}

func TestNginxConfRedirectsAuthenticatedRoutesAndServesTheDefaultCertificateOtherwise(t *testing.T) {
	conf := NginxConf(NginxSite{Dir: "/d", IP: "10.244.1.3", WebPort: 8000, WebSecurePort: 8443,
		DefaultCert: "/pki/default.crt", DefaultKey: "/pki/default.key",
		Routes:  []Route{{Host: "grafana.apps.example.com", WebSecure: true, ForwardAuth: true, TLSSecret: "monitoring/tls"}},
		CertFor: map[string][2]string{"monitoring/tls": {"/d/tls.crt", "/d/tls.key"}}})
	assert.Contains(t, conf, "listen 10.244.1.3:8443 ssl default_server;\n        ssl_certificate /pki/default.crt;")
	assert.Contains(t, conf, "server_name grafana.apps.example.com;\n        ssl_certificate /d/tls.crt;")
	assert.Contains(t, conf, "return 302 https://auth.example.com/oauth2/start?rd=$scheme://$host$request_uri;")
	assert.NotContains(t, conf, "listen 10.244.1.3:8000;\n", "the route is on websecure only")
}

func TestNginxConfAnswersTheAnnotatedForwardAuthLocationWhenItIsPlain(t *testing.T) {
	loc := "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/start?rd=%2F"
	for value, want := range map[string]string{
		loc:                     "return 302 " + loc + ";",
		"/oauth2/start?rd=%2F":  "return 302 /oauth2/start?rd=%2F;",
		"http://x/; return 200": "return 302 https://auth.example.com/oauth2/start?rd=$scheme://$host$request_uri;",
		"http://x/$host":        "return 302 https://auth.example.com/oauth2/start?rd=$scheme://$host$request_uri;",
		"http://x/\"}":          "return 302 https://auth.example.com/oauth2/start?rd=$scheme://$host$request_uri;",
	} {
		routes := RoutesFromIngresses([]*networkingv1.Ingress{ingress("grafana", map[string]string{
			annMiddlewares: "traefik-forward-auth@kubernetescrd", ForwardAuthLocationAnnotation: value}, "grafana.apps.example.com", "")}, "traefik")
		require.Len(t, routes, 1)
		conf := NginxConf(NginxSite{Dir: "/d", IP: "10.244.1.3", WebPort: 8000, WebSecurePort: 8443, Routes: routes})
		assert.Contains(t, conf, "location / { "+want+" }", "%q", value)
		assert.Contains(t, conf, "absolute_redirect off;", "a path reaches the browser as written")
	}
}
