package proxyroute

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// proxyObjects is a proxy Service on the node addresses (80 and 443) whose Deployment runs the
// given containers, with pod labels.
func proxyObjects(podLabels map[string]string, containers ...corev1.Container) Objects {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "proxy"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "proxy"}, ExternalIPs: []string{"10.0.10.11"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)}, {Name: "https", Port: 443, TargetPort: intstr.FromInt32(443)}}}}
	labels := map[string]string{"app": "proxy"}
	maps.Copy(labels, podLabels)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "proxy"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: containers}}}}
	return Objects{ProxyService: svc, ProxyWorkload: dep, Services: []corev1.Service{*svc}, Zone: zone.MustParse("apps.example.com")}
}

func implGatewayObjects(o Objects, class, controller string) Objects {
	o.GatewayClasses = []unstructured.Unstructured{{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": class}, "spec": map[string]any{"controllerName": controller}}}}
	o.Gateways = []unstructured.Unstructured{{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"namespace": "edge", "name": "lan"}, "spec": map[string]any{"gatewayClassName": class}}}}
	return o
}

func TestIdentifyImplementation(t *testing.T) {
	nginxArgs := []string{"/nginx-ingress-controller", "--controller-class=k8s.io/ingress-nginx", "--ingress-class=nginx"}
	for _, tc := range []struct {
		name              string
		objects           Objects
		want              ImplementationName
		version, ingCtrl  string
		modelled          bool
		identifiedContain string
	}{
		{name: "traefik", objects: proxyObjects(nil, corev1.Container{Name: "traefik", Image: "docker.io/traefik:v3.7.11"}),
			want: ImplTraefik, version: "v3.7.11", ingCtrl: "traefik.io/ingress-controller", modelled: true},
		{name: "k3s mirrored traefik", objects: proxyObjects(nil, corev1.Container{Name: "traefik", Image: "rancher/mirrored-library-traefik:2.10.7"}),
			want: ImplTraefik, version: "v2.10.7", modelled: true, ingCtrl: "traefik.io/ingress-controller"},
		{name: "ingress-nginx with digest", objects: proxyObjects(nil, corev1.Container{Name: "controller", Args: nginxArgs,
			Image: "registry.k8s.io/ingress-nginx/controller:v1.15.1@sha256:594ceea76b01c592858f803f9ff4d2cb40542cae2060410b2c95f75907d659e1"}),
			want: ImplIngressNginx, version: "v1.15.1", ingCtrl: "k8s.io/ingress-nginx", modelled: true},
		{name: "ingress-nginx other controller class", objects: proxyObjects(nil, corev1.Container{Name: "controller",
			Args: []string{"--controller-class", "k8s.io/internal-nginx"}, Image: "registry.k8s.io/ingress-nginx/controller:v1.12.0"}),
			want: ImplIngressNginx, version: "v1.12.0", ingCtrl: "k8s.io/internal-nginx", modelled: true},
		{name: "haproxytech", objects: proxyObjects(nil, corev1.Container{Name: "kubernetes-ingress-controller", Args: []string{"--ingress.class=haproxy"},
			Image: "docker.io/haproxytech/kubernetes-ingress:3.2.12"}),
			want: ImplHAProxyTech, version: "v3.2.12", ingCtrl: "haproxy.org/ingress-controller/haproxy"},
		{name: "contour envoy", objects: proxyObjects(nil, corev1.Container{Name: "shutdown-manager", Image: "ghcr.io/projectcontour/contour:v1.33.6"},
			corev1.Container{Name: "envoy", Image: "docker.io/envoyproxy/envoy:distroless-v1.38.3"}),
			want: ImplContour, version: "v1.33.6", identifiedContain: "beside container shutdown-manager"},
		{name: "envoy gateway", objects: implGatewayObjects(proxyObjects(map[string]string{"app.kubernetes.io/managed-by": "envoy-gateway",
			"gateway.envoyproxy.io/owning-gateway-name": "lan", "gateway.envoyproxy.io/owning-gateway-namespace": "edge"},
			corev1.Container{Name: "envoy", Image: "docker.io/envoyproxy/envoy:distroless-v1.39.0"}), "eg", "gateway.envoyproxy.io/gatewayclass-controller"),
			want: ImplEnvoyGateway, identifiedContain: "GatewayClass eg"},
		{name: "bare envoy", objects: proxyObjects(nil, corev1.Container{Name: "envoy", Image: "envoyproxy/envoy:v1.30.1"}),
			want: ImplEnvoy, version: "v1.30.1"},
		{name: "istio", objects: implGatewayObjects(proxyObjects(map[string]string{"gateway.networking.k8s.io/gateway-name": "lan"},
			corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.28.2", Args: []string{"proxy", "router"}}), "istio", "istio.io/gateway-controller"),
			// modelled: its AuthorizationPolicies (none here, none installed) decide (istio.go)
			want: ImplIstio, version: "v1.28.2", identifiedContain: "controllerName istio.io/gateway-controller", modelled: true},
		{name: "nginx gateway fabric", objects: proxyObjects(nil, corev1.Container{Name: "nginx", Image: "ghcr.io/nginx/nginx-gateway-fabric/nginx:2.6.7"}),
			want: ImplNGF, version: "v2.6.7"},
		{name: "unknown image, Gateway names it", objects: implGatewayObjects(proxyObjects(map[string]string{"gateway.networking.k8s.io/gateway-name": "lan"},
			corev1.Container{Name: "proxy", Image: "example.com/our/proxy:1"}), "nginx", "gateway.nginx.org/nginx-gateway-controller"),
			want: ImplNGF, identifiedContain: "GatewayClass nginx"},
		{name: "unknown image", objects: proxyObjects(nil, corev1.Container{Name: "proxy", Image: "example.com/our/proxy:1"}),
			want: ImplUnknown, identifiedContain: "images example.com/our/proxy:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			impl := Build(tc.objects, "").Implementation
			assert.Equal(t, tc.want, impl.Name, impl.IdentifiedBy)
			assert.Equal(t, tc.version, impl.Version)
			assert.Equal(t, tc.modelled, impl.Modelled())
			assert.True(t, impl.PodsRead)
			if tc.ingCtrl != "" {
				assert.Equal(t, tc.ingCtrl, impl.IngressController)
			}
			if !tc.modelled {
				assert.NotEmpty(t, impl.Unjudged, "an implementation not modelled says what is not judged")
			}
			assert.Contains(t, impl.String(), tc.identifiedContain)
		})
	}
}

func nginxProxy(args ...string) Objects {
	return proxyObjects(nil, corev1.Container{Name: "controller", Image: "registry.k8s.io/ingress-nginx/controller:v1.15.1",
		Args: append([]string{"/nginx-ingress-controller", "--configmap=$(POD_NAMESPACE)/ingress-nginx-controller"}, args...)})
}

func nginxClass(name, controller string) networkingv1.IngressClass {
	return networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
}

func implRoute(t *testing.T, m Model, ns, name string) Route {
	t.Helper()
	for _, r := range m.Routes {
		if r.Namespace == ns && r.Name == name {
			return r
		}
	}
	require.Failf(t, "no route", "%s/%s", ns, name)
	return Route{}
}

// TestIngressNginxRoutes: the Ingresses ingress-nginx serves and how they authenticate, as
// controller-v1.15.1 decides it (store.go GetIngressClass, authreq, authreqglobal, the catch-all).
func TestIngressNginxRoutes(t *testing.T) {
	nginx, traefik := "nginx", "traefik"
	auth := map[string]string{"nginx.ingress.kubernetes.io/auth-url": "http://oauth2-proxy.auth.svc/oauth2/auth",
		"nginx.ingress.kubernetes.io/auth-signin": "https://auth.apps.example.com/oauth2/start?rd=$escaped_request_uri"}
	classes := []networkingv1.IngressClass{nginxClass("nginx", "k8s.io/ingress-nginx"), nginxClass("traefik", "traefik.io/ingress-controller")}
	catchAll := networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "hello", Name: "hello"},
		Spec: networkingv1.IngressSpec{IngressClassName: &nginx, DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "hello", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	ingresses := []networkingv1.Ingress{
		testIngress("monitoring", "grafana", "grafana.apps.example.com", &nginx, auth),
		testIngress("wiki", "wiki", "wiki.apps.example.com", &nginx, nil),
		testIngress("docs", "docs", "docs.apps.example.com", &traefik, nil),
		testIngress("legacy", "legacy", "legacy.apps.example.com", nil, map[string]string{"kubernetes.io/ingress.class": "nginx"}),
		testIngress("bare", "bare", "bare.apps.example.com", nil, nil),
		catchAll,
	}
	o := nginxProxy()
	o.Ingresses, o.IngressClasses = ingresses, classes
	m := Build(o, "")
	require.Equal(t, ImplIngressNginx, m.Implementation.Name)

	grafana := implRoute(t, m, "monitoring", "grafana")
	assert.True(t, grafana.Served)
	assert.Equal(t, ReachLAN, grafana.Reach)
	assert.True(t, grafana.HTTPS())
	assert.Contains(t, grafana.Authentication(), "auth-url http://oauth2-proxy.auth.svc/oauth2/auth")
	wiki := implRoute(t, m, "wiki", "wiki")
	assert.True(t, wiki.Served)
	assert.Empty(t, wiki.Authentication())
	assert.False(t, implRoute(t, m, "docs", "docs").Served, "class traefik belongs to another controller")
	assert.True(t, implRoute(t, m, "legacy", "legacy").Served, "the annotation equal to --ingress-class")
	assert.False(t, implRoute(t, m, "bare", "bare").Served, "no class without --watch-ingress-without-class")
	hello := implRoute(t, m, "hello", "hello")
	assert.True(t, hello.Served && hello.CatchAll)
	assert.True(t, hello.InZone(o.Zone))
	assert.Equal(t, "grafana.apps.example.com", m.ProbeHost.Name, "the probe host comes from ingress-nginx's routes, an authenticated one first")

	t.Run("watch-ingress-without-class", func(t *testing.T) {
		o := nginxProxy("--watch-ingress-without-class=true")
		o.Ingresses, o.IngressClasses = ingresses, classes
		assert.True(t, implRoute(t, Build(o, ""), "bare", "bare").Served)
	})
	t.Run("disable-catch-all", func(t *testing.T) {
		o := nginxProxy("--disable-catch-all")
		o.Ingresses, o.IngressClasses = ingresses, classes
		assert.False(t, implRoute(t, Build(o, ""), "hello", "hello").Served)
	})
	t.Run("global-auth-url", func(t *testing.T) {
		o := nginxProxy()
		optOut := testIngress("public", "status", "status.apps.example.com", &nginx, map[string]string{"nginx.ingress.kubernetes.io/enable-global-auth": "false"})
		o.Ingresses, o.IngressClasses = append(append([]networkingv1.Ingress{}, ingresses...), optOut), classes
		o.ProxyConfigMaps = []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "ingress-nginx-controller"},
			Data: map[string]string{"global-auth-url": "http://oauth2-proxy.auth.svc/oauth2/auth"}}}
		m := Build(o, "")
		assert.Contains(t, implRoute(t, m, "wiki", "wiki").Authentication(), "global-auth-url")
		assert.Empty(t, implRoute(t, m, "public", "status").Authentication(), "enable-global-auth false opts out")
	})
	t.Run("client certificates", func(t *testing.T) {
		o := nginxProxy()
		o.Ingresses = []networkingv1.Ingress{
			testIngress("a", "mtls", "mtls.apps.example.com", &nginx, map[string]string{"nginx.ingress.kubernetes.io/auth-tls-secret": "a/ca"}),
			testIngress("a", "optional", "optional.apps.example.com", &nginx, map[string]string{"nginx.ingress.kubernetes.io/auth-tls-secret": "a/ca",
				"nginx.ingress.kubernetes.io/auth-tls-verify-client": "optional"}),
		}
		o.IngressClasses = classes
		m := Build(o, "")
		assert.Contains(t, implRoute(t, m, "a", "mtls").Authentication(), "client certificates")
		assert.Empty(t, implRoute(t, m, "a", "optional").Authentication(), "an optional client certificate lets anyone in")
	})
	t.Run("ConfigMap unread", func(t *testing.T) {
		o := nginxProxy()
		o.Ingresses, o.IngressClasses = ingresses, classes
		o.ProxyConfigMapsUnread = "forbidden"
		wiki := implRoute(t, Build(o, ""), "wiki", "wiki")
		assert.Empty(t, wiki.Authentication())
		assert.Contains(t, wiki.AuthUnsure, "edge/ingress-nginx-controller")
	})
	t.Run("IngressRoutes are not ingress-nginx's", func(t *testing.T) {
		o := nginxProxy()
		o.IngressRoutes = []unstructured.Unstructured{testIngressRoute("m", "ir", "Host(`x.apps.example.com`)")}
		r := implRoute(t, Build(o, ""), "m", "ir")
		assert.False(t, r.Served)
		assert.Contains(t, r.NotServed, "not Traefik")
	})
}

// TestUnjudgedRoutes: an implementation not modelled serves the Ingresses of its IngressClass
// (the probe host comes from them) but their authentication is not judged.
func TestUnjudgedRoutes(t *testing.T) {
	haproxy, nginx := "haproxy", "nginx"
	o := proxyObjects(nil, corev1.Container{Name: "kubernetes-ingress-controller", Image: "haproxytech/kubernetes-ingress:3.2.12", Args: []string{"--ingress.class=haproxy"}})
	o.IngressClasses = []networkingv1.IngressClass{nginxClass("haproxy", "haproxy.org/ingress-controller/haproxy"), nginxClass("nginx", "k8s.io/ingress-nginx")}
	o.Ingresses = []networkingv1.Ingress{
		testIngress("wiki", "wiki", "wiki.apps.example.com", &haproxy, nil),
		testIngress("grafana", "grafana", "grafana.apps.example.com", &haproxy, map[string]string{"haproxy.org/auth-type": "basic-auth"}),
		testIngress("other", "other", "other.apps.example.com", &nginx, nil),
	}
	m := Build(o, "")
	wiki := implRoute(t, m, "wiki", "wiki")
	assert.True(t, wiki.Served)
	assert.Contains(t, wiki.Unjudged, "HAProxy Kubernetes Ingress")
	assert.Equal(t, ReachLAN, wiki.Reach)
	assert.False(t, implRoute(t, m, "other", "other").Served)
	assert.Equal(t, "grafana.apps.example.com", m.ProbeHost.Name)
}

// Contour's root HTTPProxies are its routes: the probe host comes from them, their
// authorization is not judged.
func TestContourHTTPProxies(t *testing.T) {
	o := proxyObjects(nil, corev1.Container{Name: "shutdown-manager", Image: "ghcr.io/projectcontour/contour:v1.33.6"},
		corev1.Container{Name: "envoy", Image: "docker.io/envoyproxy/envoy:distroless-v1.38.3"})
	proxy := func(ns, name string, spec map[string]any) unstructured.Unstructured {
		return unstructured.Unstructured{Object: map[string]any{"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
			"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec}}
	}
	o.HTTPProxies = []unstructured.Unstructured{
		proxy("wiki", "wiki", map[string]any{"virtualhost": map[string]any{"fqdn": "wiki.apps.example.com"}}),
		proxy("a", "included", map[string]any{"routes": []any{}}),
		proxy("b", "other-class", map[string]any{"ingressClassName": "internal", "virtualhost": map[string]any{"fqdn": "b.apps.example.com"}}),
	}
	m := Build(o, "")
	require.Len(t, m.Routes, 2, "an included HTTPProxy has no host of its own")
	wiki := implRoute(t, m, "wiki", "wiki")
	assert.True(t, wiki.Served)
	assert.Contains(t, wiki.Unjudged, "HTTPProxy")
	assert.NotEmpty(t, implRoute(t, m, "b", "other-class").ServedUnsure)
	assert.Equal(t, "wiki.apps.example.com", m.ProbeHost.Name)
}
