package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// noExternalIPs removes the externalIPs of both Services of the healthy fixture.
func noExternalIPs() []func([]runtime.Object) []runtime.Object {
	drop := func(svc *corev1.Service) { svc.Spec.ExternalIPs = nil }
	return []func([]runtime.Object) []runtime.Object{service("traefik", "traefik", drop), service("lan-dns", "lan-dns", drop)}
}

// hostPorts maps ports on the pods of ns as hostPorts (port -> protocols).
func hostPorts(ns string, ports map[int32][]corev1.Protocol) func([]runtime.Object) []runtime.Object {
	return func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Namespace != ns {
				continue
			}
			c := &p.Spec.Containers[0]
			for port, protos := range ports {
				for _, proto := range protos {
					c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port + 8000, HostPort: port, Protocol: proto})
				}
			}
		}
		return objs
	}
}

func TestDiscoverFindsTheHostPortForm(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	m := append(noExternalIPs(),
		hostPorts("traefik", map[int32][]corev1.Protocol{80: {tcp}, 443: {tcp}}),
		hostPorts("lan-dns", map[int32][]corev1.Protocol{53: {udp}}))
	cs, dc := cluster(t, m...)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "traefik/traefik", s.ProxyService.Namespace+"/"+s.ProxyService.Name)
	assert.Equal(t, "lan-dns/lan-dns", s.DNSService.Namespace+"/"+s.DNSService.Name)
	p := s.ProxyReachable()
	assert.Equal(t, kube.FormHostPort, p.Form)
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12"}, p.Raw(), "the nodes of the Ready pods")
	assert.Contains(t, p.Addresses[0].Field, "node node-1 (pod traefik/traefik-6d5f8b7c4-a1b2c, hostPort 443/TCP)")
	d := s.DNSReachable()
	assert.Equal(t, kube.FormHostPort, d.Form)
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12"}, d.Raw())
	require.Len(t, d.Pods, 2)
	assert.Equal(t, []string{"53/UDP"}, d.Pods[0].Mapped, "53/TCP not mapped: LA103 says so")
	assert.False(t, s.UsesExternalIPs())
}

func TestHostPortFormCountsOnlyReadyPodsWithThePrimaryPort(t *testing.T) {
	tcp := corev1.ProtocolTCP
	notReady := named("traefik", "traefik-6d5f8b7c4-d3e4f", func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	})
	m := append(noExternalIPs(), hostPorts("traefik", map[int32][]corev1.Protocol{443: {tcp}}), notReady,
		hostPorts("lan-dns", map[int32][]corev1.Protocol{53: {corev1.ProtocolUDP, tcp}}))
	cs, dc := cluster(t, m...)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	p := s.ProxyReachable()
	assert.Equal(t, []string{"10.0.10.11"}, p.Raw())
	require.Len(t, p.Pods, 2)
	assert.False(t, p.Pods[1].Ready, "listed for the checks, not counted")
}

func lbService(ns, name string, class *string, ips []string, annotations map[string]string) func([]runtime.Object) []runtime.Object {
	return service(ns, name, func(svc *corev1.Service) {
		svc.Spec.ExternalIPs = nil
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Spec.LoadBalancerClass = class
		svc.Annotations = annotations
		for _, ip := range ips {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
	})
}

func TestDiscoverRecognisesTheLoadBalancerImplementations(t *testing.T) {
	nodes := []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}
	cilium := "io.cilium/node"
	other := "example.com/lb"
	// k3s ServiceLB: its svclb pod in kube-system, labelled with the Service (servicelb.go).
	svclb := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "svclb-traefik-1a2b3c4d-x",
		Labels: map[string]string{"svccontroller.k3s.cattle.io/svcname": "traefik", "svccontroller.k3s.cattle.io/svcnamespace": "traefik"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "lb-tcp-443", Image: "rancher/klipper-lb:v0.4.9",
			Ports: []corev1.ContainerPort{{ContainerPort: 443, HostPort: 443, Protocol: corev1.ProtocolTCP}}}}}}
	for _, tc := range []struct {
		name  string
		m     func([]runtime.Object) []runtime.Object
		extra []runtime.Object
		impl  string
		nodes bool
	}{
		{"servicelb", lbService("traefik", "traefik", nil, nodes, nil), []runtime.Object{svclb}, kube.LBServiceLB, true},
		{"cilium", lbService("traefik", "traefik", &cilium, nodes, nil), nil, kube.LBCiliumNode, true},
		{"metallb", lbService("traefik", "traefik", nil, []string{"192.168.1.240"}, map[string]string{"metallb.io/ip-allocated-from-pool": "lan"}), nil, kube.LBMetalLB, false},
		{"other class", lbService("traefik", "traefik", &other, nodes, nil), nil, other, false},
		{"nothing says", lbService("traefik", "traefik", nil, nodes, nil), nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, dc := cluster(t, tc.m, add(tc.extra...))
			s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
			require.NoError(t, err)
			p := s.ProxyReachable()
			assert.Equal(t, kube.FormLoadBalancer, p.Form)
			assert.Equal(t, tc.impl, p.LB.Name)
			assert.Equal(t, tc.nodes, p.LB.NodeAddresses, p.LB.Why)
			assert.NotEmpty(t, p.LB.Why)
			assert.Equal(t, kube.FormExternalIPs, s.DNSReachable().Form, "each role has its own form")
		})
	}
}

// A proxy whose pods map 80 but not 443 is still the hostPort form: reachable nowhere over
// HTTPS, which LA101 and LA102 then say, rather than a setup discovery cannot find.
func TestHostPortFormWithoutThePrimaryPortIsStillFound(t *testing.T) {
	m := append(noExternalIPs(), hostPorts("traefik", map[int32][]corev1.Protocol{80: {corev1.ProtocolTCP}}),
		hostPorts("lan-dns", map[int32][]corev1.Protocol{53: {corev1.ProtocolUDP, corev1.ProtocolTCP}}))
	cs, dc := cluster(t, m...)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	p := s.ProxyReachable()
	assert.Equal(t, kube.FormHostPort, p.Form)
	assert.Empty(t, p.Addresses)
	require.Len(t, p.Pods, 2)
	assert.Equal(t, []string{"80/TCP"}, p.Pods[0].Mapped)
}

// A Ready pod on a node discovery did not read (out of scope, forbidden or gone) gives the
// addresses of its status.hostIPs, which the kubelet copies from the node; without them, none,
// and discovery goes on (the lab's migrate cut-over found a nil node here).
func TestHostPortFormOnANodeNotReadTakesThePodsHostIPs(t *testing.T) {
	tcp := corev1.ProtocolTCP
	elsewhere := named("traefik", "traefik-6d5f8b7c4-a1b2c", func(p *corev1.Pod) {
		p.Spec.NodeName = "node-9"
		p.Status.HostIPs = []corev1.HostIP{{IP: "10.0.10.19"}}
	})
	bare := named("traefik", "traefik-6d5f8b7c4-d3e4f", func(p *corev1.Pod) { p.Spec.NodeName = "node-8" })
	m := append(noExternalIPs(), hostPorts("traefik", map[int32][]corev1.Protocol{443: {tcp}}), elsewhere, bare,
		hostPorts("lan-dns", map[int32][]corev1.Protocol{53: {corev1.ProtocolUDP, tcp}}))
	cs, dc := cluster(t, m...)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	p := s.ProxyReachable()
	assert.Equal(t, kube.FormHostPort, p.Form)
	assert.Contains(t, p.Raw(), "10.0.10.19", "node-9's address, from the pod's status")
	for _, a := range p.Addresses {
		assert.NotEqual(t, "node-8", a.Node, "no address known for node-8")
		if a.Node == "node-9" {
			assert.Contains(t, a.Field, "status.hostIPs")
		}
	}
}
