package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A large cluster's plain Services are dropped page by page; Services that claim an address,
// or that the flags name, are kept.
func TestDiscoverKeepsOnlyServicesThatClaimAnAddressOrAreNamed(t *testing.T) {
	svc := func(ns, name string, edit func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		edit(s)
		return s
	}
	keep := (&discoverer{sel: Selection{ProxyService: "edge/named"}}).relevantService
	cases := []struct {
		svc  *corev1.Service
		want bool
	}{
		{svc("a", "plain", func(*corev1.Service) {}), false},
		{svc("a", "external", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"10.0.10.11"} }), true},
		{svc("a", "lb-ip", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "10.0.10.11" }), true},
		{svc("a", "lb-status", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.10.11"}}
		}), true},
		{svc("edge", "named", func(*corev1.Service) {}), true},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, keep(c.svc), c.svc.Name)
	}
}
