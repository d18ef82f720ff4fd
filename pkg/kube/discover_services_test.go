package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

var ourAddresses = []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}

func TestDiscoverAUDPCompanionOn443IsNotASecondProxy(t *testing.T) {
	// traefik-helm-chart's HTTP/3 with service.single=false: a second Service with 443/UDP
	// only, for the same pods. kube-proxy captures 443/UDP and 443/TCP with separate rules.
	udp := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-udp"},
		Spec: corev1.ServiceSpec{ExternalIPs: ourAddresses, Selector: map[string]string{"app.kubernetes.io/name": "traefik"},
			Ports: []corev1.ServicePort{{Name: "websecure-http3", Port: 443, Protocol: corev1.ProtocolUDP}}},
	}
	cs, dc := cluster(t, add(udp))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "traefik", s.ProxyService.Name)
}

func TestDiscoverTheProxyAmongServicesClaimingOurAddressOn443(t *testing.T) {
	// CVE-2020-8554: another namespace's Service claims 10.0.10.12:443/TCP for its own pods.
	// The proxy is the one serving 80 and 443 on the DNS Service's addresses for Traefik's
	// pods; the other one is LA106's finding, not a reason to stop.
	intercept := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "metrics-proxy"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.12"}, Selector: map[string]string{"app": "metrics-proxy"},
			Ports: []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}}},
	}
	// Even one that exposes 80 and 443 on every address is told apart by its pods.
	lookalike := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "web"},
		Spec: corev1.ServiceSpec{ExternalIPs: ourAddresses, Selector: map[string]string{"app": "nginx"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 443, Protocol: corev1.ProtocolTCP}}},
	}
	nginx := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "nginx-1", Labels: map[string]string{"app": "nginx"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "docker.io/library/nginx:1.27"}}}}
	cs, dc := cluster(t, add(intercept, lookalike, nginx))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "traefik/traefik", s.ProxyService.Namespace+"/"+s.ProxyService.Name)
	assert.Equal(t, "lan-dns/lan-dns", s.DNSService.Namespace+"/"+s.DNSService.Name)
	kept := make([]string, 0, len(s.Services))
	for _, svc := range s.Services {
		kept = append(kept, svc.Namespace+"/"+svc.Name)
	}
	assert.Contains(t, kept, "team-b/metrics-proxy", "LA106 judges it")
}

func TestDiscoverTakesALoadBalancerServiceWhenNoServiceHasExternalIPs(t *testing.T) {
	// A load balancer setup: the proxy is a LoadBalancer Service with an address in its status.
	// Discovery takes it (issue 26) and says which implementation wrote the address: here none
	// it recognises, which the checks say (never PASS).
	lb := func(svc *corev1.Service) {
		svc.Spec.ExternalIPs = nil
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.1.240"}}
	}
	cs, dc := cluster(t, service("traefik", "traefik", lb))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	r := s.ProxyReachable()
	assert.Equal(t, kube.FormLoadBalancer, r.Form)
	assert.Equal(t, []string{"192.168.1.240"}, r.Raw())
	assert.False(t, r.LB.NodeAddresses)
}

func TestDiscoverSaysWhenNeitherNamedServiceCarriesExternalIPs(t *testing.T) {
	noIPs := func(svc *corev1.Service) { svc.Spec.ExternalIPs = nil }
	cs, dc := cluster(t, service("traefik", "traefik", noIPs), service("lan-dns", "lan-dns", noIPs))
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{ProxyService: "traefik/traefik", DNSService: "lan-dns/lan-dns"})
	u := usageError(t, err)
	assert.Contains(t, u.Message, "neither Service traefik/traefik nor Service lan-dns/lan-dns carries spec.externalIPs")
	assert.Contains(t, u.Fix, "spec.externalIPs")

	// One of them is enough for the checks: LA101 then names what the other lacks.
	cs, dc = cluster(t, service("lan-dns", "lan-dns", noIPs))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{DNSService: "lan-dns/lan-dns"})
	require.NoError(t, err)
	assert.Empty(t, s.DNSService.Spec.ExternalIPs)
}

func TestDiscoverSettlesTheDNSServiceByTheProxyAddresses(t *testing.T) {
	// The cluster DNS with externalIPs of its own: 53 on other addresses, not the zone's.
	kubeDNS := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.50"}, Selector: map[string]string{"k8s-app": "kube-dns"},
			Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 53, Protocol: corev1.ProtocolTCP}}},
	}
	cs, dc := cluster(t, add(kubeDNS))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "lan-dns/lan-dns", s.DNSService.Namespace+"/"+s.DNSService.Name)
}
