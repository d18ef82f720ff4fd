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
	var out []runtime.Object
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

func TestExternalIPsSecurityRecognisesEachKindOfControl(t *testing.T) {
	gatekeeperTemplate := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate",
		"metadata": map[string]any{"name": "k8sexternalips"},
		"spec": map[string]any{
			"crd":     map[string]any{"spec": map[string]any{"names": map[string]any{"kind": "K8sExternalIPs"}}},
			"targets": []any{map[string]any{"target": "admission.k8s.gatekeeper.sh", "rego": "violation[{\"msg\": msg}] { input.review.object.spec.externalIPs[_] }"}},
		},
	}}
	constraint := func(action string) *unstructured.Unstructured {
		spec := map[string]any{"parameters": map[string]any{"allowedIPs": []any{"10.0.10.11"}}}
		if action != "" {
			spec["enforcementAction"] = action
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sExternalIPs",
			"metadata": map[string]any{"name": "external-ips"}, "spec": spec,
		}}
	}
	kyverno := func(ns, action string) *unstructured.Unstructured {
		kind := "ClusterPolicy"
		md := map[string]any{"name": "restrict-external-ips"}
		if ns != "" {
			kind, md["namespace"] = "Policy", ns
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": md,
			"spec": map[string]any{"rules": []any{map[string]any{"name": "r", "validate": map[string]any{
				"failureAction": action, "pattern": map[string]any{"spec": map[string]any{"X(externalIPs)": "null"}}}}}},
		}}
	}
	fail := admissionregistrationv1.Fail
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "externalip-validation-webhook-configuration"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:          "validate-externalip.webhook.svc",
			FailurePolicy: &fail,
			ClientConfig:  admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "externalip-validation-system", Name: "externalip-validation-webhook-service"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
			}},
		}},
	}
	tests := []struct {
		name   string
		extra  []runtime.Object
		status engine.Status
		what   string
	}{
		{"Gatekeeper constraint denying", []runtime.Object{gatekeeperTemplate, constraint("")}, engine.StatusPass, "Gatekeeper K8sExternalIPs external-ips"},
		{"Gatekeeper constraint in dry run", []runtime.Object{gatekeeperTemplate, constraint("dryrun")}, engine.StatusWarn, "enforcementAction is dryrun"},
		{"Kyverno ClusterPolicy enforcing", []runtime.Object{crd("kyverno.io", "ClusterPolicy", "clusterpolicies", "v1", "Cluster"), kyverno("", "Enforce")}, engine.StatusPass, "Kyverno ClusterPolicy restrict-external-ips"},
		{"Kyverno namespaced Policy", []runtime.Object{crd("kyverno.io", "Policy", "policies", "v1", "Namespaced"), kyverno("team-x", "Enforce")}, engine.StatusWarn, "protects only namespace team-x"},
		{"externalip-webhook", []runtime.Object{webhook}, engine.StatusPass, "ValidatingWebhookConfiguration externalip-validation-webhook-configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configEnv(t, nil, chain(withoutAdmissionPolicy, addObjects(tt.extra...)))
			st, o := runConfigCheck(t, ExternalIPsSecurity(env))
			assert.Equal(t, tt.status, st, "%+v", o.Findings)
			sev := engine.SeverityInfo
			if tt.status == engine.StatusWarn {
				sev = engine.SeverityWarn
			}
			f := configFindings(o, sev, protectionObject)
			require.Len(t, f, 1, "%+v", o.Findings)
			assert.Contains(t, f[0].Message, tt.what)
		})
	}
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
	assert.Len(t, configFindings(o, engine.SeverityInfo, "Service team-y/ssh"), 1, "same address, other port: information")
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
