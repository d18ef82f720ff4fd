package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestDNSServiceBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la103-")
}

func TestDNSServiceWithoutUDPFailsAndOffersThePortToAdd(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(s *corev1.Service) {
		s.Spec.Ports = s.Spec.Ports[1:]
	}))
	st, o := runConfigCheck(t, DNSService(env))
	assert.Equal(t, engine.StatusFail, st)
	f := configFindings(o, engine.SeverityFail, "Service lan-dns/lan-dns")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "no port 53/UDP")
	assert.Contains(t, f[0].Remediation, `{"name":"dns-udp","port":53,"protocol":"UDP","targetPort":1053}`)
}

func TestDNSServiceNamedTargetPortResolvesThroughTheContainer(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(s *corev1.Service) {
		s.Spec.Ports[0].TargetPort.Type, s.Spec.Ports[0].TargetPort.StrVal = 1, "dns"
		s.Spec.Ports[1].TargetPort.Type, s.Spec.Ports[1].TargetPort.StrVal = 1, "dns"
	}))
	_, o := runConfigCheck(t, DNSService(env))
	f := configFindings(o, engine.SeverityFail, "Service lan-dns/lan-dns")
	require.Len(t, f, 1, "%+v", o.Findings)
	assert.Contains(t, f[0].Message, `port 53/TCP: targetPort "dns" names no TCP container port (declared: dns-tcp 1053/TCP)`)
}
