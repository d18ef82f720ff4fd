//go:build lab

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Two of the proxy's real-world variants on the live lab (issue 13): the Traefik chart's
// HTTP/3 companion Service (service.single=false: traefik-udp, 443/UDP only, for the same
// pods) and an Ingress of another controller's class in the zone.

// A 443/UDP companion is not a second HTTPS proxy: discovery finds the setup (no exit 2),
// LA102 passes, LA106 calls it part of the setup and the policy it suggests keeps it.
func TestDoctorTakesTheUDPCompanionForPartOfTheSetup(t *testing.T) {
	ctx := context.Background()
	proxy, err := lab.Client.CoreV1().Services("traefik").Get(ctx, "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	udp := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "traefik-udp", Namespace: "traefik"},
		Spec: corev1.ServiceSpec{
			Selector:    proxy.Spec.Selector,
			ExternalIPs: proxy.Spec.ExternalIPs,
			Ports:       []corev1.ServicePort{{Name: "websecure-http3", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolUDP}},
		},
	}
	_, err = lab.Client.CoreV1().Services("traefik").Create(ctx, udp, metav1.CreateOptions{})
	require.NoError(t, err, "the API server takes 443/UDP beside 443/TCP on the same addresses")
	t.Cleanup(func() {
		_ = lab.Client.CoreV1().Services("traefik").Delete(context.Background(), "traefik-udp", metav1.DeleteOptions{})
	})

	r := doctor(t, "--only", "LA0,LA1", "--no-helpers")
	require.NotEqual(t, 2, r.Code, "discovery must not stop on the companion: %s", r.Stderr)
	assert.Equal(t, "pass", r.check(t, "LA102").Status)
	c := r.check(t, "LA106")
	assert.Equal(t, "warn", c.Status, "no admission control in the lab: %+v", c.Findings)
	assert.True(t, c.mentions("info", "traefik/traefik-udp"), "%+v", c.Findings)
	assert.Empty(t, c.objects("fail"), "not an interception")
	var suggested string
	for _, f := range c.Findings {
		if strings.Contains(f.Remediation, "kind: ValidatingAdmissionPolicy") {
			suggested = f.Remediation
		}
	}
	assert.Contains(t, suggested, `"traefik/traefik-udp": ["10.0.10.11", "10.0.10.12", "10.0.10.13"]`)
}

// An Ingress of another controller's class is reported as not served by the proxy, is never the
// probe host (it sorts before grafana, the lab's route), and its missing authentication is not
// the proxy's finding.
func TestDoctorLeavesAnIngressOfAnotherClassOut(t *testing.T) {
	ctx := context.Background()
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	_, err := lab.Client.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.NetworkingV1().IngressClasses().Delete(context.Background(), "nginx", metav1.DeleteOptions{})
	})
	ing := ingressWithoutAuth()
	ing.Name = "aaa-shop"
	ing.Spec.Rules[0].Host = "aaa-shop.apps.example.com"
	nginx := "nginx"
	ing.Spec.IngressClassName = &nginx
	_, err = lab.Client.NetworkingV1().Ingresses("monitoring").Create(ctx, ing, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.NetworkingV1().Ingresses("monitoring").Delete(context.Background(), ing.Name, metav1.DeleteOptions{})
	})

	r := doctor(t, "--only", "LA107,LA401", "--no-helpers")
	c := r.check(t, "LA107")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions("info", "k8s.io/ingress-nginx"), "%+v", c.Findings)
	for _, f := range r.check(t, "LA401").Findings {
		if host, ok := f.Evidence["probeHost"].(string); ok {
			assert.NotEqual(t, "aaa-shop.apps.example.com", host)
		}
	}
	assert.NotContains(t, r.Stdout, `"probeHost":"aaa-shop.apps.example.com"`)
}
