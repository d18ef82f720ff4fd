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

func TestDNSServiceMissingTCPPortFixTargetsWhereCoreDNSListens(t *testing.T) {
	// The CoreDNS chart without use_tcp: 53/UDP -> 1053 only. CoreDNS answers TCP on 1053 as
	// well (one port per server block, both protocols); a 53/TCP -> 53 port would reach nothing.
	applied := roundTrip(t, corpusObjects(t, "coredns-chart-no-use-tcp"), kube.Selection{AllNamespaces: true}, DNSService, engine.StatusFail)
	require.Len(t, applied, 1)
	assert.Contains(t, applied[0], `{"name":"dns-tcp","port":53,"protocol":"TCP","targetPort":1053}`)
	assert.Contains(t, applied[0], "# Service lan-dns/lan-dns belongs to the Helm release lan-dns")
	assert.Contains(t, applied[0], "values key servers[].zones[].use_tcp")
}

func TestDNSServiceFixesRoundTripOnTheFixtures(t *testing.T) {
	for name, mutate := range map[string]func(*corev1.Service){
		"no 53/UDP":            func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[1:] },
		"no 53/TCP":            func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] },
		"targetPort named off": func(s *corev1.Service) { s.Spec.Ports[1].TargetPort = intstr.FromString("nope") },
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := fixture.Load(configHealthy)
			require.NoError(t, err)
			roundTrip(t, editObject("lan-dns", "lan-dns", mutate)(objs), kube.Selection{}, DNSService, engine.StatusFail)
		})
	}
}
