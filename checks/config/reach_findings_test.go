package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// hostPortForm turns the healthy fixture into the hostPort form (issue 26): no externalIPs,
// the pods (node-1 and node-2) map proxy and dns as hostPorts.
func hostPortForm(proxy, dns []corev1.ContainerPort) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			switch x := o.(type) {
			case *corev1.Service:
				x.Spec.ExternalIPs = nil
			case *corev1.Pod:
				switch x.Namespace {
				case "traefik":
					x.Spec.Containers[0].Ports = append(x.Spec.Containers[0].Ports, proxy...)
				case "lan-dns":
					x.Spec.Containers[0].Ports = append(x.Spec.Containers[0].Ports, dns...)
				}
			}
		}
		return objs
	}
}

var (
	proxyHostPorts = []corev1.ContainerPort{{ContainerPort: 8000, HostPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 8443, HostPort: 443, Protocol: corev1.ProtocolTCP}}
	dnsHostPorts   = []corev1.ContainerPort{{ContainerPort: 1053, HostPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 1053, HostPort: 53, Protocol: corev1.ProtocolTCP}}
)

func TestHostPortFormIsJudgedOnTheNodesOfItsPods(t *testing.T) {
	env := configEnv(t, nil, hostPortForm(proxyHostPorts, dnsHostPorts))
	require.Equal(t, kube.FormHostPort, env.Setup.ProxyReachable().Form)
	// The zone answers node-3 (10.0.10.13), where neither pod runs: both lists lack it.
	st, o := runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusFail, st)
	codes := map[string]string{}
	for _, f := range o.Findings {
		codes[f.Code] = f.Remediation
	}
	require.Contains(t, codes, "LA101-ZONE-EXTRA", "%+v", o.Findings)
	for _, id := range []func(*Env) engine.Check{ProxyService, DNSService} {
		st, o := runConfigCheck(t, id(env))
		assert.NotEqual(t, engine.StatusFail, st, "%+v", o.Findings)
	}
	st, o = runConfigCheck(t, ExternalIPsSecurity(env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, o.Skip, "does not use spec.externalIPs (proxy: hostPort; DNS: hostPort)")
}

func TestHostPortFormFailsAPortNotMapped(t *testing.T) {
	env := configEnv(t, nil, hostPortForm(proxyHostPorts, dnsHostPorts[:1]))
	st, o := runConfigCheck(t, DNSService(env))
	assert.Equal(t, engine.StatusFail, st)
	f := configFindings(o, engine.SeverityFail, "")
	require.Len(t, f, 2, "one per pod")
	assert.Equal(t, "LA103-HOSTPORT-MISSING", f[0].Code)
	assert.Contains(t, f[0].Message, "maps 53/UDP but not 53/TCP")
	assert.Contains(t, f[0].Remediation, "hostPort: 53, protocol: TCP")
}

func TestLoadBalancerFormWarnsOnAnImplementationWithoutNodeAddresses(t *testing.T) {
	metallb := editObject("traefik", "traefik", func(svc *corev1.Service) {
		svc.Spec.ExternalIPs = nil
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Annotations = map[string]string{"metallb.io/ip-allocated-from-pool": "lan"}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.1.240"}}
	})
	env := configEnv(t, nil, metallb)
	st, o := runConfigCheck(t, ProxyService(env))
	assert.Equal(t, engine.StatusWarn, st)
	f := configFindings(o, engine.SeverityWarn, "")
	require.NotEmpty(t, f)
	assert.Equal(t, "LA102-LB-NOT-NODE-ADDRESSES", f[0].Code)
	assert.Contains(t, f[0].Message, "MetalLB")
	st, _ = runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusFail, st, "192.168.1.240 is no node's address and not the zone's")
}
