package proxyroute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func streamRoute(kind, ns, name string, spec map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec,
	}}
}

func tcpRoute(ns, name string, eps []any, match string, services ...any) unstructured.Unstructured {
	spec := map[string]any{"routes": []any{map[string]any{"match": match, "services": services}}}
	if eps != nil {
		spec["entryPoints"] = eps
	}
	return streamRoute("IngressRouteTCP", ns, name, spec)
}

func streamNamed(t *testing.T, s *Setup, name string) StreamRoute {
	t.Helper()
	for _, r := range s.StreamRoutes {
		if r.Name == name {
			return r
		}
	}
	require.Failf(t, "no stream route", "%s among %+v", name, s.StreamRoutes)
	return StreamRoute{}
}

// chart41Postgres is the chart's entry points plus postgres (:5432) and a UDP one (dns :5353),
// with a Service port 5432 -> postgres on the node addresses.
func chart41Postgres(s *Setup) {
	s.ProxyWorkload.Spec.Template.Spec.Containers[0].Args = append(append([]string{}, chart41Args...),
		"--entryPoints.postgres.address=:5432/tcp", "--entryPoints.dns.address=:5353/udp")
	s.Services[0].Spec.Ports = append(s.Services[0].Spec.Ports,
		corev1.ServicePort{Name: "postgres", Port: 5432, TargetPort: intstr.FromInt32(5432), Protocol: corev1.ProtocolTCP})
}

// Traefik v3.7.9 binds a TCP router without entry points to the default ones (TCP, not
// "traefik"), a UDP router without entry points to every UDP entry point, and a named entry
// point only when it has the router's protocol (pkg/server/aggregator.go mergeConfiguration,
// pkg/config/runtime/runtime_tcp.go and runtime_udp.go GetXRoutersByEntryPoints).
func TestStreamRoutesBindEntryPointsAsTraefikDoes(t *testing.T) {
	db := map[string]any{"name": "postgres", "port": int64(5432)}
	s := proxySetup(nil, chart41Postgres, func(s *Setup) {
		s.IngressRouteStreams = []unstructured.Unstructured{
			tcpRoute("db", "postgres", []any{"postgres"}, "HostSNI(`*`)", db),
			tcpRoute("db", "defaults", nil, "HostSNI(`db.apps.example.com`)", db),
			tcpRoute("db", "wrong-protocol", []any{"dns"}, "HostSNI(`*`)", db),
			tcpRoute("db", "internal-only", []any{"metrics"}, "HostSNI(`*`)", db),
			tcpRoute("db", "empty-match", []any{"postgres"}, "", db),
			tcpRoute("db", "other-ns", []any{"postgres"}, "HostSNI(`*`)", map[string]any{"name": "pg", "namespace": "other", "port": int64(5432)}),
			streamRoute("IngressRouteUDP", "dns", "udp", map[string]any{"routes": []any{map[string]any{"services": []any{map[string]any{"name": "dns", "port": int64(53)}}}}}),
		}
	})
	s.DeriveModels("")

	pg := streamNamed(t, s, "postgres")
	assert.True(t, pg.Served)
	assert.Equal(t, ReachLAN, pg.Reach)
	assert.Equal(t, []string{"*"}, pg.SNI)
	assert.Equal(t, []Backend{{Kind: "Service", Namespace: "db", Name: "postgres"}}, pg.Backends)
	assert.Contains(t, pg.Hosts(), "every TCP connection")

	def := streamNamed(t, s, "defaults")
	names := make([]string, 0, len(def.Via))
	for _, e := range def.Via {
		names = append(names, e.Name)
	}
	assert.ElementsMatch(t, []string{"metrics", "postgres", "web", "websecure"}, names, "the default entry points: TCP ones but traefik")
	assert.Equal(t, ReachLAN, def.Reach)

	wrong := streamNamed(t, s, "wrong-protocol")
	assert.Empty(t, wrong.Via, "a UDP entry point does not exist for a TCP router")
	assert.Equal(t, ReachNotLAN, wrong.Reach)

	assert.Equal(t, ReachNotLAN, streamNamed(t, s, "internal-only").Reach, "metrics is on no Service port")

	empty := streamNamed(t, s, "empty-match")
	assert.False(t, empty.Served)
	assert.Contains(t, empty.NotServed, "Empty match rule")

	other := streamNamed(t, s, "other-ns")
	assert.False(t, other.Served)
	assert.Contains(t, other.NotServed, "allowCrossNamespace is off")

	udp := streamNamed(t, s, "udp")
	assert.Equal(t, corev1.ProtocolUDP, udp.Protocol)
	require.Len(t, udp.Via, 1)
	assert.Equal(t, "dns", udp.Via[0].Name, "every UDP entry point")
	assert.Equal(t, ReachNotLAN, udp.Reach, "no UDP Service port targets dns")

	assert.Equal(t, []string{"IngressRouteTCP db/postgres", "IngressRouteTCP db/defaults"}, s.StreamUsers("postgres"))
}

// Another implementation does not read IngressRouteTCPs, and a route of another class is skipped
// by Traefik's CRD provider (shouldProcessIngress).
func TestStreamRoutesOfAnotherClassOrImplementationAreNotServed(t *testing.T) {
	route := tcpRoute("db", "postgres", []any{"postgres"}, "HostSNI(`*`)", map[string]any{"name": "postgres", "port": int64(5432)})
	route.Object["spec"].(map[string]any)["ingressClassName"] = "internal"
	s := proxySetup(nil, chart41Postgres, func(s *Setup) { s.IngressRouteStreams = []unstructured.Unstructured{route} })
	s.DeriveModels("")
	r := streamNamed(t, s, "postgres")
	assert.False(t, r.Served)
	assert.Contains(t, r.NotServed, `its class "internal"`)
}

// Traefik serves its own API, ping and metrics on their entry points (traefik by default).
func TestInternalServicesAreReadFromTheArguments(t *testing.T) {
	s := proxySetup(append(append([]string{}, chart41Args...), "--api.insecure=true", "--ping=true", "--metrics.prometheus=true",
		"--metrics.prometheus.entryPoint=metrics"))
	s.DeriveModels("")
	assert.Equal(t, []string{"the API and dashboard (--api.insecure)", "ping"}, s.Traefik.InternalServices("traefik"))
	assert.Equal(t, []string{"Prometheus metrics"}, s.Traefik.InternalServices("metrics"))
	assert.Empty(t, s.Traefik.InternalServices("websecure"))
}
