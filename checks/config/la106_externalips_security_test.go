package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestExternalIPsSecurityBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la106-")
}

// withoutAdmissionPolicy removes the healthy fixtures' ValidatingAdmissionPolicy.
func withoutAdmissionPolicy(objs []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, 0, len(objs))
	for _, o := range objs {
		switch o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			continue
		}
		out = append(out, o)
	}
	return out
}

func crd(group, kind, plural, version, scope string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": scope,
			"names":    map[string]any{"kind": kind, "plural": plural},
			"versions": []any{map[string]any{"name": version, "served": true, "storage": true}}},
	}}
}

func TestExternalIPsSecurityLoadBalancerAddressesCountAsClaims(t *testing.T) {
	lb := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-x", Name: "lb"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}}},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.10.13"}}}},
	}
	other := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-y", Name: "ssh"},
		Spec:       corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.11"}, Ports: []corev1.ServicePort{{Port: 2222}}},
	}
	env := configEnv(t, nil, addObjects(lb, other))
	st, o := runConfigCheck(t, ExternalIPsSecurity(env))
	assert.Equal(t, engine.StatusFail, st)
	f := configFindings(o, engine.SeverityFail, "Service team-x/lb")
	require.Len(t, f, 1)
	assert.Equal(t, []string{"10.0.10.13:53/UDP"}, f[0].Evidence["claims"])
	assert.Contains(t, f[0].Message, "Service lan-dns/lan-dns also exposes")
	f = configFindings(o, engine.SeverityFail, "Service team-y/ssh")
	require.Len(t, f, 1, "our node address on another port: the node's own port is taken")
	assert.Equal(t, "LA106-NODE-PORT-CLAIM", f[0].Code)
	assert.Contains(t, f[0].Message, "10.0.10.11:2222/TCP (node-1's address)")
}

func TestExternalIPsSecurityUnreadableSourcesAreNotAPass(t *testing.T) {
	env := configEnv(t, nil, withoutAdmissionPolicy)
	env.Setup.Partial["validatingwebhookconfigurations.admissionregistration.k8s.io"] = apierrors.NewForbidden(schema.GroupResource{Resource: "validatingwebhookconfigurations"}, "", errors.New("RBAC"))
	st, o := runConfigCheck(t, ExternalIPsSecurity(env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, o.Skip, "could not read validatingwebhookconfigurations")
}

func TestExternalIPsSecuritySurfacesTheDeprecationAndWhatComesNext(t *testing.T) {
	env := configEnv(t, nil, nil)
	env.Setup.APIWarnings = []string{"spec.externalIPs is deprecated and may no longer be implemented in some clusters"}
	_, o := runConfigCheck(t, ExternalIPsSecurity(env))
	f := configFindings(o, engine.SeverityInfo, "spec.externalIPs (Service traefik/traefik, Service lan-dns/lan-dns)")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "deprecated since Kubernetes 1.36")
	assert.Equal(t, env.Setup.APIWarnings, f[0].Evidence["apiWarningsSeen"])
	assert.Equal(t, "v1.37.2", f[0].Evidence["serverVersion"])

	env.Setup.ServerVersion = "v1.40.0"
	st, o := runConfigCheck(t, ExternalIPsSecurity(env))
	assert.Equal(t, engine.StatusWarn, st)
	f = configFindings(o, engine.SeverityWarn, "spec.externalIPs (Service traefik/traefik, Service lan-dns/lan-dns)")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "Kubernetes 1.40")
}
