package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// libraryTemplate is gatekeeper-library's k8sexternalips (library/general/externalip/template.yaml).
func libraryTemplate() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate",
		"metadata": map[string]any{"name": "k8sexternalips"},
		"spec": map[string]any{
			"crd": map[string]any{"spec": map[string]any{"names": map[string]any{"kind": "K8sExternalIPs"}}},
			"targets": []any{map[string]any{"target": "admission.k8s.gatekeeper.sh", "rego": `package k8sexternalips

violation[{"msg": msg}] {
  input.review.kind.kind == "Service"
  input.review.kind.group == ""
  allowedIPs := {ip | ip := input.parameters.allowedIPs[_]}
  externalIPs := {ip | ip := input.review.object.spec.externalIPs[_]}
  forbiddenIPs := externalIPs - allowedIPs
  count(forbiddenIPs) > 0
  msg := sprintf("service has forbidden external IPs: %v", [forbiddenIPs])
}
`}},
		},
	}}
}

func gatekeeperConstraint(action string, allowed []any, excluded ...any) *unstructured.Unstructured {
	spec := map[string]any{"parameters": map[string]any{"allowedIPs": allowed},
		"match": map[string]any{"kinds": []any{map[string]any{"apiGroups": []any{""}, "kinds": []any{"Service"}}}, "excludedNamespaces": excluded}}
	if action != "" {
		spec["enforcementAction"] = action
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "K8sExternalIPs",
		"metadata": map[string]any{"name": "external-ips"}, "spec": spec,
	}}
}

// admissionWebhook is the validating webhook a policy engine registers for Services.
func admissionWebhook(config, name string, labels map[string]string, failure admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: config, Labels: labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: name, FailurePolicy: &failure,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
			}},
		}},
	}
}

func gatekeeperWebhook() runtime.Object {
	return admissionWebhook("gatekeeper-validating-webhook-configuration", "validation.gatekeeper.sh", nil, admissionregistrationv1.Ignore)
}

func kyvernoWebhook() runtime.Object {
	return admissionWebhook("kyverno-resource-validating-webhook-cfg", "validate.kyverno.svc-fail", map[string]string{"webhook.kyverno.io/managed-by": "kyverno"}, admissionregistrationv1.Fail)
}

func kyvernoPolicy(ns, action string) *unstructured.Unstructured {
	kind := "ClusterPolicy"
	md := map[string]any{"name": "restrict-external-ips"}
	if ns != "" {
		kind, md["namespace"] = "Policy", ns
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": md,
		"spec": map[string]any{"rules": []any{map[string]any{"name": "r",
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Service"}}}}},
			"validate": map[string]any{
				"failureAction": action, "pattern": map[string]any{"spec": map[string]any{"X(externalIPs)": "null"}}}}}},
	}}
}

func apiServerPod(plugins string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-apiserver-cp-1", Labels: map[string]string{"component": "kube-apiserver", "tier": "control-plane"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver", Command: []string{"kube-apiserver", "--enable-admission-plugins=" + plugins}}}},
	}
}

func denyAllPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-external-ips"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(object.spec.externalIPs)"}}}}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-external-ips"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-external-ips", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	return p, b
}

func vpnService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.14"}, Ports: []corev1.ServicePort{{Port: 1194, Protocol: corev1.ProtocolUDP}}}}
}

func TestExternalIPsSecurityJudgesWhatEachControlPermits(t *testing.T) {
	ours := []any{"10.0.10.11", "10.0.10.12", "10.0.10.13"}
	fail := admissionregistrationv1.Fail
	externalIPWebhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
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
	kyvernoCRDs := []runtime.Object{crd("kyverno.io", "ClusterPolicy", "clusterpolicies", "v1", "Cluster"), crd("kyverno.io", "Policy", "policies", "v1", "Namespaced")}
	unbound, _ := denyAllPolicy()
	tests := []struct {
		name   string
		extra  []runtime.Object
		status engine.Status
		code   string
		what   string
	}{
		{"Gatekeeper library, our namespaces excluded", []runtime.Object{gatekeeperWebhook(), libraryTemplate(), gatekeeperConstraint("", []any{}, "traefik", "lan-dns")},
			engine.StatusPass, "LA106-ADMISSION-ENFORCED", "Gatekeeper K8sExternalIPs external-ips refuses a Service of another namespace claiming our addresses (Gatekeeper's webhook has failurePolicy Ignore"},
		{"Gatekeeper library allowing our addresses", []runtime.Object{gatekeeperWebhook(), libraryTemplate(), gatekeeperConstraint("", ours)},
			engine.StatusWarn, "LA106-ADMISSION-ALLOWS-CLAIMS", "which it checks whatever the namespace"},
		{"Gatekeeper in dry run", []runtime.Object{gatekeeperWebhook(), libraryTemplate(), gatekeeperConstraint("dryrun", []any{}, "traefik", "lan-dns")},
			engine.StatusWarn, "LA106-ADMISSION-NOT-ENFORCED", "enforcementAction is dryrun"},
		{"Gatekeeper without its webhook", []runtime.Object{libraryTemplate(), gatekeeperConstraint("", []any{}, "traefik", "lan-dns")},
			engine.StatusWarn, "LA106-ADMISSION-NOT-ENFORCED", "Gatekeeper is not running"},
		{"Kyverno ClusterPolicy enforcing", append([]runtime.Object{kyvernoWebhook(), kyvernoPolicy("", "Enforce")}, kyvernoCRDs...),
			engine.StatusPass, "LA106-ADMISSION-ENFORCED", "Kyverno ClusterPolicy restrict-external-ips rule r refuses a Service of another namespace"},
		{"Kyverno without its webhook", append([]runtime.Object{kyvernoPolicy("", "Enforce")}, kyvernoCRDs...),
			engine.StatusWarn, "LA106-ADMISSION-NOT-ENFORCED", "Kyverno is not running"},
		{"Kyverno namespaced Policy", append([]runtime.Object{kyvernoWebhook(), kyvernoPolicy("team-x", "Enforce")}, kyvernoCRDs...),
			engine.StatusWarn, "LA106-ADMISSION-ALLOWS-CLAIMS", "a Policy of namespace team-x applies to that namespace only"},
		{"Kyverno namespaced Policy without its webhook", append([]runtime.Object{kyvernoPolicy("team-x", "Enforce")}, kyvernoCRDs...),
			engine.StatusWarn, "LA106-ADMISSION-NOT-ENFORCED", "; even enforced, it would let a Service of another namespace claim our addresses (a Policy of namespace team-x applies to that namespace only)"},
		{"a ValidatingAdmissionPolicy denying every externalIP, without a binding", []runtime.Object{unbound},
			engine.StatusWarn, "LA106-ADMISSION-NOT-ENFORCED", "no ValidatingAdmissionPolicyBinding puts it in force; enforced, it would refuse the next update of Service traefik/traefik"},
		{"externalip-webhook", []runtime.Object{externalIPWebhook},
			engine.StatusWarn, "LA106-ADMISSION-UNKNOWN", "--allowed-external-ip-cidrs"},
		{"DenyServiceExternalIPs on in kubeadm's static pod", []runtime.Object{apiServerPod("NodeRestriction,DenyServiceExternalIPs")},
			engine.StatusPass, "LA106-ADMISSION-ENFORCED", "the API server's DenyServiceExternalIPs admission plugin (Pod kube-system/kube-apiserver-cp-1)"},
		{"DenyServiceExternalIPs off in kubeadm's static pod", []runtime.Object{apiServerPod("NodeRestriction")},
			engine.StatusWarn, "LA106-ADMISSION", "the API server's flags (Pod kube-system/kube-apiserver-cp-1) do not enable the DenyServiceExternalIPs admission plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configEnv(t, nil, chain(withoutAdmissionPolicy, addObjects(tt.extra...)))
			st, o := runConfigCheck(t, ExternalIPsSecurity(env))
			assert.Equal(t, tt.status, st, "%+v", o.Findings)
			var found []engine.Finding
			for _, f := range o.Findings {
				if f.Code == tt.code && f.Object == protectionObject {
					found = append(found, f)
				}
			}
			require.Len(t, found, 1, "%+v", o.Findings)
			assert.Contains(t, found[0].Message, tt.what)
		})
	}
}

func TestExternalIPsSecurityAPolicyRefusingOurUpdatesWarnsAndListsThem(t *testing.T) {
	// The VPN Service uses externalIPs too (another node's address): a policy denying every
	// externalIP refuses its next update as well as ours. Ours are a WARN; the VPN Service is
	// outside the setup, so its refusal is told in its own LA106-OTHER-USER.
	p, b := denyAllPolicy()
	env := configEnv(t, nil, chain(withoutAdmissionPolicy, addObjects(vpnService(), p, b)))
	st, o := runConfigCheck(t, ExternalIPsSecurity(env))
	assert.Equal(t, engine.StatusWarn, st)
	var refuses, other *engine.Finding
	for i, f := range o.Findings {
		switch f.Code {
		case "LA106-ADMISSION-REFUSES-UPDATES":
			refuses = &o.Findings[i]
		case "LA106-OTHER-USER":
			other = &o.Findings[i]
		}
	}
	require.NotNil(t, refuses, "%+v", o.Findings)
	refused := refuses.Evidence["refused"].([]string)
	require.Len(t, refused, 2)
	for i, svc := range []string{"Service traefik/traefik", "Service lan-dns/lan-dns"} {
		assert.Contains(t, refused[i], "the next update of "+svc)
	}
	require.NotNil(t, other, "%+v", o.Findings)
	assert.Equal(t, "Service vpn/openvpn", other.Object)
	assert.Contains(t, other.Message, "no-external-ips (binding no-external-ips) refuses its next update")
	assert.Contains(t, refuses.Remediation, `// "vpn/openvpn": ["10.0.10.14"],`, "the operator chooses whether the VPN Service keeps its address")
}

// A tenant's Service on a public resolver's address (not one of ours, so not a clash) captures
// the cluster's own DNS traffic to 8.8.8.8: it is a WARN with its withdrawal, and the suggested
// policy does not allow-list it (issue 23: it was written into the fix as legitimate).
func TestExternalIPsSecurityAPublicAddressIsNeverAllowListed(t *testing.T) {
	resolver := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "dns"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"8.8.8.8"}, Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}}}}
	env := configEnv(t, nil, chain(withoutAdmissionPolicy, addObjects(resolver)))
	st, o := runConfigCheck(t, ExternalIPsSecurity(env))
	assert.Equal(t, engine.StatusWarn, st)
	var public *engine.Finding
	var policy string
	for i, f := range o.Findings {
		if f.Code == "LA106-PUBLIC-CLAIM" {
			public = &o.Findings[i]
		}
		if strings.Contains(f.Remediation, "kind: ValidatingAdmissionPolicy") {
			policy = f.Remediation
		}
	}
	require.NotNil(t, public, "%+v", o.Findings)
	assert.Equal(t, "Service tenant/dns", public.Object)
	assert.Contains(t, public.Remediation, `[{"op":"remove","path":"/spec/externalIPs"}]`)
	require.NotEmpty(t, policy)
	for line := range strings.SplitSeq(policy, "\n") {
		if strings.Contains(line, `"tenant/dns"`) {
			assert.True(t, strings.HasPrefix(strings.TrimSpace(line), "//") || strings.HasPrefix(strings.TrimSpace(line), "#"), "only in a comment: %q", line)
		}
	}
}

func TestExternalIPsSecurityNodePortsOfAnyNodeAreNotToBeClaimed(t *testing.T) {
	// node-vpn's address is not ours, but its SSH port is still the node's own.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-vpn"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.10.14"}}}}
	ssh := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "git", Name: "ssh"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.14"}, Ports: []corev1.ServicePort{{Port: 22, Protocol: corev1.ProtocolTCP}}}}
	env := configEnv(t, nil, addObjects(node, ssh, vpnService()))
	_, o := runConfigCheck(t, ExternalIPsSecurity(env))
	f := configFindings(o, engine.SeverityFail, "Service git/ssh")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "10.0.10.14:22/TCP (node-vpn's address; SSH)")
	assert.Empty(t, configFindings(o, "", "Service vpn/openvpn"), "the VPN Service on its own node address is a legitimate user")
}

func TestExternalIPsSecurityTheUDPCompanionIsPartOfTheSetup(t *testing.T) {
	udp := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-udp"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, Selector: map[string]string{"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-traefik"},
			Ports: []corev1.ServicePort{{Name: "websecure-http3", Port: 443, Protocol: corev1.ProtocolUDP}}}}
	env := configEnv(t, nil, addObjects(udp))
	st, o := runConfigCheck(t, ExternalIPsSecurity(env))
	f := configFindings(o, engine.SeverityInfo, "Service traefik/traefik-udp")
	require.Len(t, f, 1)
	assert.Equal(t, "LA106-SHARED-ADDRESS", f[0].Code)
	// The fixtures' policy names traefik/traefik and lan-dns/lan-dns only: the chart's next
	// upgrade, which renders traefik-udp too, would be refused.
	assert.Equal(t, engine.StatusWarn, st)
	w := configFindings(o, engine.SeverityWarn, protectionObject)
	require.Len(t, w, 1, "%+v", o.Findings)
	assert.Equal(t, "LA106-ADMISSION-REFUSES-UPDATES", w[0].Code)
	assert.Contains(t, w[0].Message, "the next update of Service traefik/traefik-udp")
	assert.Contains(t, w[0].Remediation, `"traefik/traefik-udp": ["10.0.10.11", "10.0.10.12", "10.0.10.13"]`)
}

func TestExternalIPsSecurityFixesRoundTripOnTheFixtures(t *testing.T) {
	for _, variant := range []string{
		"la106-no-admission-control", "la106-kyverno-in-audit-mode", "la106-policy-only-warns",
		"la106-another-service-claims-our-address", "la106-kube-proxy-ignores-external-ips",
	} {
		t.Run(variant, func(t *testing.T) {
			objs, err := fixture.Load(configHealthy, configBroken+"/"+variant)
			require.NoError(t, err)
			before := engine.StatusWarn
			if variant == "la106-another-service-claims-our-address" || variant == "la106-kube-proxy-ignores-external-ips" {
				before = engine.StatusFail
			}
			roundTrip(t, objs, kube.Selection{}, ExternalIPsSecurity, before)
		})
	}
}

func TestExternalIPsSecurityFixesRoundTripOnTheCorpus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before engine.Status
	}{
		{"vap-deny-every-externalip", engine.StatusWarn},
		{"gatekeeper-k8sexternalips-allowlist-node-addresses", engine.StatusWarn},
		{"kyverno-restrict-external-ips-audit", engine.StatusWarn},
		{"intercepting-service-other-namespace", engine.StatusFail},
		{"traefik-41-http3-udp-companion", engine.StatusWarn},
		{"traefik-41-seed-single-list", engine.StatusWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roundTrip(t, corpusObjects(t, tc.name), kube.Selection{AllNamespaces: true}, ExternalIPsSecurity, tc.before)
		})
	}
}

func TestExternalIPsSecurityTheSuggestedPolicyKeepsTheSetupAndLeavesOthersToTheOperator(t *testing.T) {
	// The VPN Service and the chart's traefik-udp use externalIPs today: after the suggested
	// policy is applied, LA106 passes, which means it refuses a foreign claim and refuses no
	// update of the setup's Services (traefik-udp, a companion, included); the VPN Service's
	// allow line is there, commented out, for the operator to choose.
	udp := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-udp"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, Selector: map[string]string{"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-traefik"},
			Ports: []corev1.ServicePort{{Name: "websecure-http3", Port: 443, Protocol: corev1.ProtocolUDP}}}}
	objs, err := fixture.Load(configHealthy)
	require.NoError(t, err)
	objs = chain(withoutAdmissionPolicy, addObjects(udp, vpnService()))(objs)
	applied := roundTrip(t, objs, kube.Selection{}, ExternalIPsSecurity, engine.StatusWarn)
	require.Len(t, applied, 1)
	for _, key := range []string{`"traefik/traefik"`, `"lan-dns/lan-dns"`, `"traefik/traefik-udp"`, `// "vpn/openvpn": ["10.0.10.14"],`} {
		assert.Contains(t, applied[0], key)
	}
}

func TestExternalIPsSecurityClaimFixesRoundTrip(t *testing.T) {
	// An interceptor keeping another address of its own, and one on a node's SSH port: the fix
	// takes only the offending addresses away.
	intercept := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "proxy"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"192.168.50.5", "10.0.10.12"}, Ports: []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}}}}
	ssh := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "git", Name: "ssh"},
		Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.10.11"}, Ports: []corev1.ServicePort{{Port: 22, Protocol: corev1.ProtocolTCP}}}}
	objs, err := fixture.Load(configHealthy)
	require.NoError(t, err)
	// Two rounds: team-b/proxy keeps 192.168.50.5, and the fixtures' policy, which names our
	// two Services only, would then refuse its next update (the second fix replaces it).
	applied := roundTrips(t, addObjects(intercept, ssh)(objs), kube.Selection{}, ExternalIPsSecurity, engine.StatusFail, 2)
	joined := strings.Join(applied, "\n")
	assert.Contains(t, joined, `[{"op":"replace","path":"/spec/externalIPs","value":["192.168.50.5"]}]`)
	assert.Contains(t, joined, `[{"op":"remove","path":"/spec/externalIPs"}]`)
}

func TestExternalIPsSecurityControlFixesRoundTrip(t *testing.T) {
	fail := admissionregistrationv1.Fail
	externalIPWebhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "externalip-validation-webhook-configuration"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate-externalip.webhook.svc", FailurePolicy: &fail,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
			}}}},
	}
	for name, extra := range map[string][]runtime.Object{
		"Gatekeeper in dry run":              {gatekeeperWebhook(), libraryTemplate(), gatekeeperConstraint("dryrun", []any{}, "traefik", "lan-dns")},
		"Gatekeeper allowing our addresses":  {gatekeeperWebhook(), libraryTemplate(), gatekeeperConstraint("", []any{"10.0.10.11", "10.0.10.12", "10.0.10.13"})},
		"externalip-webhook (not knowable)":  {externalIPWebhook},
		"a policy refusing every externalIP": func() []runtime.Object { p, b := denyAllPolicy(); return []runtime.Object{p, b, vpnService()} }(),
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := fixture.Load(configHealthy)
			require.NoError(t, err)
			roundTrip(t, chain(withoutAdmissionPolicy, addObjects(extra...))(objs), kube.Selection{}, ExternalIPsSecurity, engine.StatusWarn)
		})
	}
}
