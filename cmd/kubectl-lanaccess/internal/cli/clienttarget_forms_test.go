package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// client-config and client-check read the address list from the form in use (issue 26): the
// same workstation commands before and after the move off externalIPs.
func TestClientTargetReadsTheAddressesOfTheFormInUse(t *testing.T) {
	z, err := zone.Parse("apps.example.com")
	require.NoError(t, err)
	svc := func(ns string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns}}
	}
	hostPort := kube.Reach{Form: kube.FormHostPort, Addresses: []kube.ReachAddr{{Addr: "10.0.10.11", Node: "node-1"}, {Addr: "10.0.10.12", Node: "node-2"}}}
	lb := kube.Reach{Form: kube.FormLoadBalancer, LB: kube.LBImplementation{Name: kube.LBServiceLB, NodeAddresses: true},
		Addresses: []kube.ReachAddr{{Addr: "10.0.10.11"}, {Addr: "10.0.10.12"}}}
	s := &kube.Setup{Zone: z, ProxyService: svc("traefik"), DNSService: svc("lan-dns"), ProxyReach: lb, DNSReach: hostPort}
	tgt, err := targetFromSetup(s)
	require.NoError(t, err)
	assert.Equal(t, "[10.0.10.11 10.0.10.12]", fmt.Sprint(tgt.Servers))
	assert.Equal(t, "[10.0.10.11 10.0.10.12]", fmt.Sprint(tgt.Answers))

	// Before the move: the Services' externalIPs, as always.
	s.DNSService.Spec.ExternalIPs = []string{"10.0.10.13"}
	tgt, err = targetFromSetup(s)
	require.NoError(t, err)
	assert.Equal(t, "[10.0.10.13]", fmt.Sprint(tgt.Servers))

	// No address in the form in use: said, with the form.
	s.DNSService.Spec.ExternalIPs, s.DNSReach = nil, kube.Reach{Form: kube.FormHostPort}
	_, err = targetFromSetup(s)
	assert.ErrorContains(t, err, "has no LAN address (hostPort)")
}
