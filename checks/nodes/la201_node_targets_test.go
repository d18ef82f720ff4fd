package nodes

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func targetsService(ns, name string, ips []string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ExternalIPs: ips, Ports: ports}}
}

func TestListenerNodesTakeTheServicesTCPAndUDPPortsAndNameTheOrphans(t *testing.T) {
	nodes := []corev1.Node{la201Node("node-2", "10.0.10.12"), la201Node("node-1", "10.0.10.11")}
	proxy := targetsService("traefik", "traefik", []string{"10.0.10.11", "10.0.10.12", "10.0.10.99"},
		corev1.ServicePort{Port: 443},
		corev1.ServicePort{Port: 9000, Protocol: corev1.ProtocolSCTP}, // not in /proc/net/{tcp,udp}
		corev1.ServicePort{Port: 65536 + 80})                          // refused by the API server: never port 80
	dns := targetsService("lan-dns", "lan-dns", []string{"10.0.10.11"},
		corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP}, corev1.ServicePort{Port: 443})
	got, orphans := listenerNodes(nodes, nil, proxy, nil, dns)
	require.Len(t, got, 2)
	assert.Equal(t, "node-1", got[0].Node.Name, "sorted by node name")
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.10.11")}, got[0].Addrs)
	assert.Equal(t, map[servicePortKey][]string{
		{Protocol: "tcp", Port: 443}: {"traefik/traefik", "lan-dns/lan-dns"},
		{Protocol: "udp", Port: 53}:  {"lan-dns/lan-dns"},
	}, got[0].Ports)
	assert.Equal(t, map[servicePortKey][]string{{Protocol: "tcp", Port: 443}: {"traefik/traefik"}}, got[1].Ports)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.10.99")}, orphans)
}

func TestPodClaimsFollowHostIPExceptWithHostNetwork(t *testing.T) {
	nodes := []corev1.Node{la201Node("node-1", "10.0.10.11")}
	ln, _ := listenerNodes(nodes, nil, targetsService("traefik", "traefik", []string{"10.0.10.11"}, corev1.ServicePort{Port: 443}))
	require.Len(t, ln, 1)
	pod := func(name string, hostNetwork bool, ports ...corev1.ContainerPort) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   corev1.PodSpec{NodeName: "node-1", HostNetwork: hostNetwork, Containers: []corev1.Container{{Name: "c", Ports: ports}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	pods := []corev1.Pod{
		pod("wildcard", false, corev1.ContainerPort{ContainerPort: 8443, HostPort: 443, HostIP: "0.0.0.0"}),
		pod("our-address", false, corev1.ContainerPort{ContainerPort: 8443, HostPort: 443, HostIP: "10.0.10.11"}),
		pod("other-address", false, corev1.ContainerPort{ContainerPort: 8443, HostPort: 443, HostIP: "192.168.1.5"}),
		pod("unreadable-hostip", false, corev1.ContainerPort{ContainerPort: 8443, HostPort: 443, HostIP: "not-an-ip"}),
		pod("host-network", true, corev1.ContainerPort{ContainerPort: 443, HostIP: "192.168.1.5"}),
		pod("container-port-only", false, corev1.ContainerPort{ContainerPort: 443}),
		pod("wrapping-host-port", false, corev1.ContainerPort{ContainerPort: 8443, HostPort: 65536 + 443}),
		pod("udp", false, corev1.ContainerPort{ContainerPort: 443, HostPort: 443, Protocol: corev1.ProtocolUDP}),
	}
	claims := podClaims(ln[0], pods, nil)
	names := make([]string, 0, len(claims))
	for _, c := range claims {
		names = append(names, c.Pod.Name)
	}
	assert.Equal(t, []string{"wildcard", "our-address", "unreadable-hostip", "host-network"}, names,
		"a hostPort bound to another address, a port that is not the node's, an invalid port and another protocol claim nothing")
}
