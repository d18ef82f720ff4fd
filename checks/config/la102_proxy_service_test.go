package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func TestProxyServiceBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la102-")
}

func TestProxyServiceSelectorThatMatchesNoPodFails(t *testing.T) {
	env := configEnv(t, nil, editObject("traefik", "traefik", func(s *corev1.Service) {
		s.Spec.Selector = map[string]string{"app": "traefik-typo"}
	}))
	st, o := runConfigCheck(t, ProxyService(env))
	assert.Equal(t, engine.StatusFail, st)
	f := configFindings(o, engine.SeverityFail, "Service traefik/traefik")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "the selector app=traefik-typo matches no pod")
	assert.Equal(t, "app=traefik-typo", f[0].Evidence["selector"])
}

func TestProxyServiceWithoutSelectorWarns(t *testing.T) {
	env := configEnv(t, nil, editObject("traefik", "traefik", func(s *corev1.Service) { s.Spec.Selector = nil }))
	st, o := runConfigCheck(t, ProxyService(env))
	assert.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	f := configFindings(o, engine.SeverityWarn, "Service traefik/traefik")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "no selector")
}

func TestProxyServiceWithoutPort443Fails(t *testing.T) {
	env := configEnv(t, nil, nil)
	env.Setup.ProxyService.Spec.Ports = env.Setup.ProxyService.Spec.Ports[:1]
	st, o := runConfigCheck(t, ProxyService(env))
	assert.Equal(t, engine.StatusFail, st)
	f := configFindings(o, engine.SeverityFail, "Service traefik/traefik")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Remediation, `"port":443,"protocol":"TCP","targetPort":"websecure"`)
}

func TestProxyServiceFixesRoundTripOnTheFixtures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Service)
		before engine.Status
	}{
		{"no port 80", func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] }, engine.StatusWarn},
		{"no port 443", func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }, engine.StatusFail},
		{"443 as UDP", func(s *corev1.Service) { s.Spec.Ports[1].Protocol = corev1.ProtocolUDP }, engine.StatusFail},
		{"a single unnamed port 443", func(s *corev1.Service) {
			s.Spec.Ports = s.Spec.Ports[1:]
			s.Spec.Ports[0].Name = ""
		}, engine.StatusWarn},
		{"targetPort names nothing", func(s *corev1.Service) { s.Spec.Ports[1].TargetPort = intstr.FromString("https") }, engine.StatusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := fixture.Load(configHealthy)
			require.NoError(t, err)
			sel := kube.Selection{ProxyService: "traefik/traefik"}
			applied := roundTrip(t, editObject("traefik", "traefik", tc.mutate)(objs), sel, ProxyService, tc.before)
			require.NotEmpty(t, applied)
		})
	}
}

func TestProxyServiceAddedPortNamesTheUnnamedOne(t *testing.T) {
	// The API server refuses a second port while the first has no name.
	env := configEnvWith(t, kube.Selection{ProxyService: "traefik/traefik"}, nil, editObject("traefik", "traefik", func(s *corev1.Service) {
		s.Spec.Ports = s.Spec.Ports[1:]
		s.Spec.Ports[0].Name = ""
	}))
	_, o := runConfigCheck(t, ProxyService(env))
	f := configFindings(o, engine.SeverityWarn, "Service traefik/traefik")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Remediation, `[{"op":"add","path":"/spec/ports/0/name","value":"tcp-443"},{"op":"add","path":"/spec/ports/-","value":{"name":"web","port":80,"protocol":"TCP","targetPort":"web"}}]`)
}

func TestProxyServiceLocalPolicyFixRoundTrips(t *testing.T) {
	objs, err := fixture.Load(configHealthy, configBroken+"/la102-local-traffic-policy")
	require.NoError(t, err)
	roundTrip(t, objs, kube.Selection{}, ProxyService, engine.StatusFail)
}
