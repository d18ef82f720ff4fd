package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
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
