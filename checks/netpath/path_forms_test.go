package netpath

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// The probes of doctor and monitor dial where each role is reachable in the form in use
// (issue 26): a hostPort form is the node's own 443 and 53, whatever the Service's ports.
func TestPathDialsTheAddressesOfTheFormInUse(t *testing.T) {
	svc := func(ns string, port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "websecure", Port: port, Protocol: corev1.ProtocolTCP}}}}
	}
	reach := kube.Reach{Form: kube.FormHostPort, Addresses: []kube.ReachAddr{{Addr: "10.0.10.12"}, {Addr: "10.0.10.11"}}}
	s := &kube.Setup{ProxyService: svc("traefik", 8443), DNSService: svc("lan-dns", 1053), ProxyReach: reach, DNSReach: reach}
	p := PathFromSetup(s)
	https, dns := make([]string, 0, len(p.HTTPS)), make([]string, 0, len(p.DNS))
	for _, t := range p.HTTPS {
		https = append(https, t.Addr.String())
	}
	for _, t := range p.DNS {
		dns = append(dns, t.Addr.String())
	}
	assert.Equal(t, []string{"10.0.10.12:443", "10.0.10.11:443"}, https)
	assert.Equal(t, []string{"10.0.10.12:53", "10.0.10.11:53"}, dns)
	assert.Equal(t, "[10.0.10.11 10.0.10.12]", fmt.Sprint(p.ProxyAddrs))
}
