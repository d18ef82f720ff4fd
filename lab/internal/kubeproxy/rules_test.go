package kubeproxy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func lanDNS() (*corev1.Service, *discoveryv1.EndpointSlice) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lan-dns", Namespace: "traefik"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.12.34", ExternalIPs: []string{"10.0.10.11", "10.0.10.12"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "lan-dns-x", Namespace: "traefik", Labels: map[string]string{discoveryv1.LabelServiceName: "lan-dns"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("dns"), Port: new(int32(1053)), Protocol: new(corev1.ProtocolUDP)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.2.5"}, NodeName: new("node-2"), Conditions: discoveryv1.EndpointConditions{Ready: new(true)}},
			{Addresses: []string{"10.244.3.5"}, NodeName: new("node-3"), Conditions: discoveryv1.EndpointConditions{Ready: new(true)}},
			{Addresses: []string{"10.244.1.9"}, NodeName: new("node-1"), Conditions: discoveryv1.EndpointConditions{Ready: new(false)}},
		},
	}
	return svc, slice
}

func TestRulesSendEveryFrontendToAReadyEndpointPreferringTheLocalOne(t *testing.T) {
	svc, slice := lanDNS()
	rules := Rules("node-3", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice})
	require.Len(t, rules, 3, "ClusterIP and two externalIPs")
	for _, r := range rules {
		assert.Equal(t, "10.244.3.5", r.Endpoint.IP)
		assert.Equal(t, int32(1053), r.Endpoint.Port)
		assert.Equal(t, corev1.ProtocolUDP, r.Protocol)
	}
	rules = Rules("node-1", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice})
	require.NotEmpty(t, rules)
	assert.NotEqual(t, "10.244.1.9", rules[0].Endpoint.IP, "a not-ready endpoint never receives traffic")
}

// kube-proxy's IPv4 proxier ignores the IPv6 externalIPs of a Service (and the whole Service
// when it has no IPv4 ClusterIP, or none at all): the API server accepts fd00:10::11 in a
// single-stack IPv4 Service's externalIPs, and no node captures it.
func TestRulesCaptureOnlyTheIPv4AddressesOfServicesWithAnIPv4ClusterIP(t *testing.T) {
	svc, slice := lanDNS()
	svc.Spec.ExternalIPs = append(svc.Spec.ExternalIPs, "fd00:10::11")
	rules := Rules("node-2", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice})
	frontends := make([]string, 0, len(rules))
	for _, r := range rules {
		frontends = append(frontends, r.Frontend)
	}
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12", "10.96.12.34"}, frontends)

	svc.Spec.ClusterIPs = []string{"fd00:96::12", "10.96.12.34"}
	assert.Len(t, Rules("node-2", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice}), 3, "dual stack, IPv6 first: the IPv4 family still captured")
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "fd00:96::12", []string{"fd00:96::12"}
	assert.Empty(t, Rules("node-2", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice}), "an IPv6-only Service is not the IPv4 proxier's")
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = corev1.ClusterIPNone, nil
	assert.Empty(t, Rules("node-2", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice}), "headless: skipped, externalIPs too")
}

func TestRulesSkipServicesWithoutReadyEndpoints(t *testing.T) {
	svc, slice := lanDNS()
	for i := range slice.Endpoints {
		slice.Endpoints[i].Conditions.Ready = new(false)
	}
	assert.Empty(t, Rules("node-2", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice}))
}

func TestRestoreInputDeclaresOnlyTheLabChains(t *testing.T) {
	svc, slice := lanDNS()
	in := RestoreInput(Rules("node-2", []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{slice}))
	assert.True(t, strings.HasPrefix(in, "*nat\n:LAB-SERVICES - [0:0]\n:LAB-POSTROUTING - [0:0]\n"))
	assert.Contains(t, in, "-A LAB-SERVICES -d 10.0.10.12/32 -p udp -m udp --dport 53 -m comment --comment \"traefik/lan-dns\" -j DNAT --to-destination 10.244.2.5:1053\n")
	assert.NotContains(t, in, ":PREROUTING")
	assert.True(t, strings.HasSuffix(in, "COMMIT\n"))
}

func TestStaleUDPListsFrontendsWhoseEndpointMovedAppearedOrVanished(t *testing.T) {
	ep := func(ip string) Endpoint { return Endpoint{IP: ip, Port: 1194} }
	old := []Rule{
		{Frontend: "10.0.10.14", Port: 1194, Protocol: corev1.ProtocolUDP, Endpoint: ep("10.244.4.1")},
		{Frontend: "10.0.10.11", Port: 53, Protocol: corev1.ProtocolUDP, Endpoint: ep("10.244.2.1")},
		{Frontend: "10.0.10.11", Port: 443, Protocol: corev1.ProtocolTCP, Endpoint: ep("10.244.1.2")},
		{Frontend: "10.96.0.10", Port: 53, Protocol: corev1.ProtocolUDP, Endpoint: ep("10.244.2.2")},
	}
	cur := []Rule{
		{Frontend: "10.0.10.14", Port: 1194, Protocol: corev1.ProtocolUDP, Endpoint: ep("10.244.4.2")},
		{Frontend: "10.0.10.11", Port: 53, Protocol: corev1.ProtocolUDP, Endpoint: ep("10.244.2.1")},
		{Frontend: "10.0.10.12", Port: 53, Protocol: corev1.ProtocolUDP, Endpoint: ep("10.244.2.1")},
	}
	assert.Equal(t, []Frontend{{"10.0.10.12", 53}, {"10.0.10.14", 1194}, {"10.96.0.10", 53}}, StaleUDP(old, cur),
		"moved, appeared and vanished UDP frontends are flushed; TCP flows end by themselves; an unchanged UDP endpoint keeps its flows")
}
