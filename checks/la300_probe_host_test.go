package checks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func ingressRoute(ns, name, match string, middlewares bool) unstructured.Unstructured {
	route := map[string]any{"match": match}
	if middlewares {
		route["middlewares"] = []any{map[string]any{"name": "forward-auth"}}
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"routes": []any{route}},
	}}
}

func ingress(ns, name, host string, annotations map[string]string) networkingv1.Ingress {
	return networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host}}},
	}
}

func TestChooseProbeHost(t *testing.T) {
	tests := []struct {
		name       string
		flag       string
		routes     []unstructured.Unstructured
		ingresses  []networkingv1.Ingress
		wantHost   string
		wantSource string
	}{
		{
			name: "--host wins over the routes", flag: "Wiki.Apps.Example.com.",
			routes:   []unstructured.Unstructured{ingressRoute("m", "grafana", "Host(`grafana.apps.example.com`)", true)},
			wantHost: "wiki.apps.example.com", wantSource: "--host",
		},
		{
			name: "a route with a middleware is preferred: it is the one that answers 302",
			routes: []unstructured.Unstructured{
				ingressRoute("docs", "docs", "Host(`docs.apps.example.com`)", false),
				ingressRoute("monitoring", "grafana", "Host(`grafana.apps.example.com`) && PathPrefix(`/`)", true),
			},
			wantHost: "grafana.apps.example.com", wantSource: "IngressRoute monitoring/grafana (a route with a middleware)",
		},
		{
			name:     "Traefik v2's several hosts in one Host() are all candidates, the first by name wins",
			routes:   []unstructured.Unstructured{ingressRoute("a", "multi", "Host(`zz.apps.example.com`, `aa.apps.example.com`)", false)},
			wantHost: "aa.apps.example.com", wantSource: "IngressRoute a/multi",
		},
		{
			name:      "an Ingress with a Traefik middleware annotation is a candidate",
			ingresses: []networkingv1.Ingress{ingress("web", "app", "app.apps.example.com", map[string]string{middlewaresAnnotation: "auth-forward@kubernetescrd"})},
			wantHost:  "app.apps.example.com", wantSource: "Ingress web/app (a route with a middleware)",
		},
		{
			name: "hosts outside the zone, wildcards and HostRegexp are not candidates",
			routes: []unstructured.Unstructured{
				ingressRoute("a", "out", "Host(`grafana.example.net`)", true),
				ingressRoute("a", "re", "HostRegexp(`^.+\\.apps\\.example\\.com$`)", true),
			},
			ingresses: []networkingv1.Ingress{ingress("a", "wild", "*.apps.example.com", nil)},
			wantHost:  "apps.example.com", wantSource: "zone apex (no route of the proxy for the zone was found; name one with --host)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{
				Setup:   &kube.Setup{Zone: "apps.example.com.", IngressRoutes: tc.routes, Ingresses: tc.ingresses},
				Options: Options{ProbeHost: tc.flag},
			}
			h := chooseProbeHost(env)
			assert.Equal(t, tc.wantHost, h.Name)
			assert.Equal(t, tc.wantSource, h.Source)
		})
	}
}
