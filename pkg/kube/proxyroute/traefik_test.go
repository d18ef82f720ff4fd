package proxyroute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

var traefikLabels = map[string]string{"app.kubernetes.io/name": "traefik"}

// proxySetup is a Traefik Deployment with args (and container ports as the chart names them)
// behind a Service exposing 80 -> web and 443 -> websecure on the node addresses.
func proxySetup(args []string, mutate ...func(*Setup)) *Setup {
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: traefikLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "traefik", Image: "docker.io/traefik:v3.7.11", Args: args,
				Ports: []corev1.ContainerPort{
					{Name: "metrics", ContainerPort: 9100}, {Name: "traefik", ContainerPort: 8080},
					{Name: "web", ContainerPort: 8000}, {Name: "websecure", ContainerPort: 8443},
				},
			}}},
		}},
	}
	svc := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik"},
		Spec: corev1.ServiceSpec{Selector: traefikLabels, ExternalIPs: []string{"10.0.10.11"}, Ports: []corev1.ServicePort{
			{Name: "web", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP},
			{Name: "websecure", Port: 443, TargetPort: intstr.FromString("websecure"), Protocol: corev1.ProtocolTCP},
		}},
	}
	s := &Setup{Objects: Objects{Zone: zone.MustParse("apps.example.com"), ProxyWorkload: dep, Services: []corev1.Service{svc},
		MiddlewaresInstalled: true}}
	s.ProxyService = &s.Services[0]
	for _, m := range mutate {
		m(s)
	}
	return s
}

// chart41Args are the entry points traefik-helm-chart v41.3.0 renders by default.
var chart41Args = []string{
	"--entryPoints.metrics.address=:9100/tcp", "--entryPoints.traefik.address=:8080/tcp",
	"--entryPoints.web.address=:8000/tcp", "--entryPoints.websecure.address=:8443/tcp",
	"--providers.kubernetescrd", "--providers.kubernetesingress", "--entryPoints.websecure.http.tls=true",
}

func routeNamed(t *testing.T, s *Setup, name string) Route {
	t.Helper()
	for _, r := range s.Routes {
		if r.Name == name {
			return r
		}
	}
	require.Failf(t, "no route", "%s among %+v", name, s.Routes)
	return Route{}
}

func TestTraefikEntryPointsAreReadFromTheArgumentsAndMappedToServicePorts(t *testing.T) {
	s := proxySetup(chart41Args)
	s.DeriveModels("")
	cfg := s.Traefik
	require.True(t, cfg.EntryPointsKnown, cfg.EntryPointsWhy)
	web, _ := cfg.EntryPoint("web")
	assert.Equal(t, []string{"80/TCP of Service traefik/traefik"}, web.LAN)
	internal, _ := cfg.EntryPoint("traefik")
	assert.False(t, internal.Exposed(), "the chart does not expose the internal entry point")
	assert.True(t, cfg.AllowCrossNamespaceKnown)
	assert.False(t, cfg.AllowCrossNamespace, "Traefik's default")
	entryPoints := cfg.DefaultEntryPoints()
	defaults := make([]string, 0, len(entryPoints))
	for _, e := range entryPoints {
		defaults = append(defaults, e.Name)
	}
	assert.Equal(t, []string{"metrics", "web", "websecure"}, defaults, "every TCP entry point but traefik")
}

func TestTraefikAsDefaultEntryPointsAreTheOnlyDefaults(t *testing.T) {
	s := proxySetup(append(chart41Args, "--entrypoints.websecure.asDefault=true"))
	s.DeriveModels("")
	defaults := s.Traefik.DefaultEntryPoints()
	require.Len(t, defaults, 1)
	assert.Equal(t, "websecure", defaults[0].Name)
}

func TestTraefikEntryPointsWithoutArgumentsComeFromTheChartsPortNames(t *testing.T) {
	s := proxySetup(nil)
	s.DeriveModels("")
	require.True(t, s.Traefik.EntryPointsKnown)
	assert.Contains(t, s.Traefik.EntryPointsWhy, "named ports")
	ws, ok := s.Traefik.EntryPoint("websecure")
	require.True(t, ok)
	assert.Equal(t, int32(8443), ws.Port)
	assert.True(t, ws.Exposed())
}

func TestTraefikConfigurationFileMakesEntryPointsUnknown(t *testing.T) {
	s := proxySetup([]string{"--configFile=/etc/traefik/traefik.yml"}, func(s *builder) {
		s.ProxyWorkload.Spec.Template.Spec.Containers[0].Ports = nil
		s.IngressRoutes = []unstructured.Unstructured{entryIngressRoute("web", "wiki", "Host(`wiki.apps.example.com`)")}
	})
	s.DeriveModels("")
	assert.False(t, s.Traefik.EntryPointsKnown)
	assert.False(t, s.Traefik.AllowCrossNamespaceKnown)
	r := routeNamed(t, s, "wiki")
	assert.Equal(t, ReachUnknown, r.Reach)
	assert.Contains(t, r.ReachWhy, "configuration file")
}

func TestTraefikHostPortAndHostNetworkExposeEntryPoints(t *testing.T) {
	s := proxySetup(chart41Args, func(s *builder) {
		s.ProxyWorkload.Spec.Template.Spec.Containers[0].Ports[1].HostPort = 9000
	})
	s.DeriveModels("")
	e, _ := s.Traefik.EntryPoint("traefik")
	assert.Equal(t, []string{"hostPort 9000"}, e.LAN)

	s = proxySetup(chart41Args, func(s *builder) { s.ProxyWorkload.Spec.Template.Spec.HostNetwork = true })
	s.DeriveModels("")
	e, _ = s.Traefik.EntryPoint("metrics")
	assert.True(t, e.Exposed())
}

func TestTraefikUDPCompanionServiceExposesTheHTTP3EntryPoint(t *testing.T) {
	s := proxySetup(append(chart41Args, "--entryPoints.websecure-http3.address=:8443/udp"), func(s *builder) {
		s.Services = append(s.Services, corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-udp"},
			Spec: corev1.ServiceSpec{Selector: traefikLabels, ExternalIPs: []string{"10.0.10.11"}, Ports: []corev1.ServicePort{
				{Name: "websecure-http3", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolUDP}}},
		})
		s.ProxyService = &s.Services[0]
	})
	s.DeriveModels("")
	e, ok := s.Traefik.EntryPoint("websecure-http3")
	require.True(t, ok)
	assert.Equal(t, corev1.ProtocolUDP, e.Protocol)
	assert.Equal(t, []string{"443/UDP of Service traefik/traefik-udp"}, e.LAN)
	assert.True(t, s.selectsProxyPods(&s.Services[1]))
}

func entryIngressRoute(ns, name, match string, entryPoints ...string) unstructured.Unstructured {
	u := testIngressRoute(ns, name, match)
	if len(entryPoints) > 0 {
		eps := make([]any, 0, len(entryPoints))
		for _, e := range entryPoints {
			eps = append(eps, e)
		}
		u.Object["spec"].(map[string]any)["entryPoints"] = eps
	}
	return u
}

func TestRoutesReachTheLANOnlyThroughExposedEntryPoints(t *testing.T) {
	s := proxySetup(chart41Args, func(s *builder) {
		s.IngressRoutes = []unstructured.Unstructured{
			entryIngressRoute("traefik", "dashboard", "PathPrefix(`/dashboard`)", "traefik"),
			entryIngressRoute("demo", "whoami", "Host(`whoami.apps.example.com`)"),
			entryIngressRoute("demo", "typo", "Host(`typo.apps.example.com`)", "webseucre"),
		}
	})
	s.DeriveModels("")
	dash := routeNamed(t, s, "dashboard")
	assert.Equal(t, ReachNotLAN, dash.Reach)
	assert.Contains(t, dash.ReachWhy, "traefik (:8080/TCP)")
	who := routeNamed(t, s, "whoami")
	assert.Equal(t, ReachLAN, who.Reach, "no entryPoints: every default one, web and websecure included")
	assert.True(t, who.HTTPS())
	typo := routeNamed(t, s, "typo")
	assert.Equal(t, ReachNotLAN, typo.Reach)
	assert.Contains(t, typo.ReachWhy, "webseucre")
}

func TestRoutesWithACrossNamespaceMiddlewareAreRefusedUnlessAllowed(t *testing.T) {
	cross := func(args []string) *Setup {
		s := proxySetup(args, func(s *builder) {
			s.Middlewares = []unstructured.Unstructured{testMiddleware("traefik", "sso", map[string]any{"forwardAuth": map[string]any{"address": "http://sso.auth/verify"}})}
			ir := testIngressRoute("monitoring", "grafana", "Host(`grafana.apps.example.com`)")
			ir.Object["spec"].(map[string]any)["routes"].([]any)[0].(map[string]any)["middlewares"] = []any{map[string]any{"name": "sso", "namespace": "traefik"}}
			s.IngressRoutes = []unstructured.Unstructured{ir}
		})
		s.DeriveModels("")
		return s
	}
	s := cross(chart41Args)
	r := routeNamed(t, s, "grafana")
	assert.False(t, r.Served)
	assert.True(t, r.Refused)
	assert.Contains(t, r.NotServed, "allowCrossNamespace is off")
	assert.Equal(t, "apps.example.com", s.ProbeHost.Name, "a refused route is never the probe host")

	s = cross(append(chart41Args, "--providers.kubernetescrd.allowCrossNamespace=true"))
	r = routeNamed(t, s, "grafana")
	assert.True(t, r.Served)
	assert.Equal(t, "grafana.apps.example.com", s.ProbeHost.Name)
	assert.Equal(t, "http://sso.auth/verify", s.ProbeHost.ForwardAuth)

	s = cross(append(chart41Args, "--configFile=/etc/traefik/traefik.yml"))
	r = routeNamed(t, s, "grafana")
	assert.True(t, r.Served)
	assert.Contains(t, r.ServedUnsure, "--configFile=/etc/traefik/traefik.yml may set it")
}

func TestRoutesNamingAKubernetesCRDMiddlewareAreRefusedWithoutCrossNamespace(t *testing.T) {
	s := proxySetup(chart41Args, func(s *builder) {
		ir := testIngressRoute("monitoring", "grafana", "Host(`grafana.apps.example.com`)")
		ir.Object["spec"].(map[string]any)["routes"].([]any)[0].(map[string]any)["middlewares"] = []any{map[string]any{"name": "traefik-sso@kubernetescrd"}}
		s.IngressRoutes = []unstructured.Unstructured{ir}
	})
	s.DeriveModels("")
	r := routeNamed(t, s, "grafana")
	assert.True(t, r.Refused)
	assert.Contains(t, r.NotServed, "@kubernetescrd")
}

func TestIngressesOutsideTheCrossProviderNamespacesAreSkipped(t *testing.T) {
	traefik := "traefik"
	s := proxySetup(append(chart41Args, "--providers.kubernetesingress.crossProviderNamespaces=infra"), func(s *builder) {
		s.Ingresses = append(s.Ingresses, testIngress("web", "app", "app.apps.example.com", &traefik, map[string]string{TraefikMiddlewaresAnnotation: "traefik-sso@kubernetescrd"}))
	})
	s.DeriveModels("")
	r := routeNamed(t, s, "app")
	assert.True(t, r.Refused)
	assert.Contains(t, r.NotServed, "crossProviderNamespaces (infra)")
}

func TestIngressRoutesOfAnotherClassAreNotServed(t *testing.T) {
	s := proxySetup(chart41Args, func(s *builder) {
		ir := testIngressRoute("web", "other", "Host(`other.apps.example.com`)")
		ir.Object["spec"].(map[string]any)["ingressClassName"] = "internal"
		s.IngressRoutes = []unstructured.Unstructured{ir}
	})
	s.DeriveModels("")
	r := routeNamed(t, s, "other")
	assert.False(t, r.Served)
	assert.False(t, r.Refused)
	assert.Contains(t, r.NotServed, `its class "internal"`)
}

func TestEntryPointMiddlewaresProtectTheRoutesOnThem(t *testing.T) {
	sso := testMiddleware("auth", "sso", map[string]any{"forwardAuth": map[string]any{"address": "http://sso.auth/verify"}})
	build := func(extra ...string) *Setup {
		s := proxySetup(append(append([]string{}, chart41Args...), extra...), func(s *builder) {
			s.Middlewares = []unstructured.Unstructured{sso}
			s.IngressRoutes = []unstructured.Unstructured{entryIngressRoute("wiki", "wiki", "Host(`wiki.apps.example.com`)", "websecure")}
		})
		s.DeriveModels("")
		return s
	}
	r := routeNamed(t, build("--entryPoints.websecure.http.middlewares=auth-sso@kubernetescrd"), "wiki")
	assert.Equal(t, "forwardAuth (entry point websecure: auth-sso@kubernetescrd)", r.Authentication())
	assert.Equal(t, "http://sso.auth/verify", r.ForwardAuthAddress())

	r = routeNamed(t, build("--entryPoints.web.http.middlewares=auth-sso@kubernetescrd"), "wiki")
	assert.Empty(t, r.Authentication(), "the middleware is on another entry point")

	r = routeNamed(t, build("--entryPoints.websecure.http.middlewares=sso@file"), "wiki")
	assert.Empty(t, r.Authentication(), "a file provider's middleware is not read")
}

// An IngressRoute's service in another namespace is refused like a middleware there
// (traefik/traefik v3.7.9 kubernetes_http.go nameAndService: "service %s/%s not in the parent
// resource namespace %s", and the route is skipped).
func TestRoutesSendingToAServiceOfAnotherNamespaceAreRefusedUnlessAllowed(t *testing.T) {
	build := func(args []string) Route {
		s := proxySetup(args, func(s *builder) {
			ir := testIngressRoute("web", "portal", "Host(`auth.apps.example.com`)")
			ir.Object["spec"].(map[string]any)["routes"].([]any)[0].(map[string]any)["services"] = []any{
				map[string]any{"name": "authelia", "namespace": "auth", "port": int64(9091)}}
			s.IngressRoutes = []unstructured.Unstructured{ir}
		})
		s.DeriveModels("")
		return routeNamed(t, s, "portal")
	}
	r := build(chart41Args)
	assert.True(t, r.Refused)
	assert.Equal(t, "its Service auth/authelia is in namespace auth, not the route's, and providers.kubernetesCRD.allowCrossNamespace is off (Deployment traefik/traefik container traefik)", r.NotServed)
	r = build(append(chart41Args, "--providers.kubernetescrd.allowCrossNamespace=true"))
	assert.True(t, r.Served, r.NotServed)
	assert.Equal(t, []Backend{{Kind: "Service", Namespace: "auth", Name: "authelia"}}, r.Backends)
}

func TestTraefikVersionIsReadFromAFullVersionTagOnly(t *testing.T) {
	for image, want := range map[string]string{
		"docker.io/traefik:v3.1.2":                   "v3.1.2",
		"traefik:3.3.0":                              "v3.3.0",
		"ghcr.io/traefik/traefik:v3.7.9-alpine":      "v3.7.9",
		"registry:5000/traefik:v3.4.1@sha256:abcdef": "v3.4.1",
		"traefik:v3.3.0-rc1":                         "v3.3.0",
		"traefik":                                    "",
		"traefik:latest":                             "",
		"traefik:v3":                                 "",
		"traefik:v3.3":                               "",
		"traefik@sha256:abcdef":                      "",
		"registry:5000/traefik":                      "",
	} {
		assert.Equal(t, want, TraefikConfig{Image: image}.Version(), image)
	}
}
