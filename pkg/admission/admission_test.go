package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
)

var nodeAddrs = []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}

func svc(ns, name string, ips ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ExternalIPs: ips, Ports: []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}}}}
}

func create(s *corev1.Service) Request { return Request{Operation: Create, Object: s} }
func update(s *corev1.Service) Request {
	return Request{Operation: Update, Object: s, OldObject: s.DeepCopy()}
}

// corpus loads a corpus case's admission objects.
type corpusObjects struct {
	vaps     []admissionregistrationv1.ValidatingAdmissionPolicy
	bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	webhooks []admissionregistrationv1.ValidatingWebhookConfiguration
	kyverno  []unstructured.Unstructured
	gkTmpl   []unstructured.Unstructured
	gkCons   []unstructured.Unstructured
}

func load(t *testing.T, paths ...string) corpusObjects {
	t.Helper()
	objs, err := fixture.Load(paths...)
	require.NoError(t, err)
	var c corpusObjects
	for _, o := range objs {
		switch v := o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			c.vaps = append(c.vaps, *v)
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			c.bindings = append(c.bindings, *v)
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			c.webhooks = append(c.webhooks, *v)
		case *unstructured.Unstructured:
			switch v.GetKind() {
			case "ClusterPolicy", "Policy":
				c.kyverno = append(c.kyverno, *v)
			case "ConstraintTemplate":
				c.gkTmpl = append(c.gkTmpl, *v)
			case "K8sExternalIPs":
				c.gkCons = append(c.gkCons, *v)
			}
		}
	}
	return c
}

func corpusCase(name string) string { return "../../testdata/corpus/" + name + "/objects.yaml" }

func one(t *testing.T, cs []Control) Control {
	t.Helper()
	require.Len(t, cs, 1)
	return cs[0]
}

func TestAValidatingAdmissionPolicyDenyingEveryExternalIPRefusesOurNextUpdate(t *testing.T) {
	o := load(t, corpusCase("vap-deny-every-externalip"))
	c := one(t, ValidatingAdmissionPolicies(o.vaps, o.bindings))
	assert.True(t, c.Enforcing)
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
	v := c.Admit(update(svc("traefik", "traefik", nodeAddrs...)))
	assert.Equal(t, Denied, v.Decision, "no exemption for an object that already violates: %s", v.Why)
	assert.Equal(t, Allowed, c.Admit(create(svc("team-b", "x"))).Decision)
}

func TestTheHealthyFixturesPolicyReservesOurAddressesForOurServices(t *testing.T) {
	o := load(t, "../../testdata/fixtures/healthy")
	c := one(t, ValidatingAdmissionPolicies(o.vaps, o.bindings))
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
	assert.Equal(t, Allowed, c.Admit(update(svc("traefik", "traefik", nodeAddrs...))).Decision)
	assert.Equal(t, Allowed, c.Admit(update(svc("lan-dns", "lan-dns", nodeAddrs...))).Decision)
	assert.Equal(t, Denied, c.Admit(update(svc("traefik", "traefik", "10.0.10.99"))).Decision, "only our addresses")
}

func vap(expression string, mutate ...func(*admissionregistrationv1.ValidatingAdmissionPolicy)) admissionregistrationv1.ValidatingAdmissionPolicy {
	p := admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression}},
		},
	}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func binding(actions ...admissionregistrationv1.ValidationAction) admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: actions}}
}

func TestValidatingAdmissionPolicySemantics(t *testing.T) {
	const denyAll = "!has(object.spec.externalIPs)"
	foreign := create(svc("team-b", "x", "10.0.10.12"))

	c := one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{vap(denyAll)}, nil))
	assert.False(t, c.Enforcing, "without a binding")
	assert.Equal(t, Allowed, c.Admit(foreign).Decision)
	assert.Equal(t, Denied, c.Violates(foreign).Decision)

	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{vap(denyAll)}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Warn)}))
	assert.False(t, c.Enforcing, "Warn only")

	withCondition := vap(denyAll, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-team-b", Expression: "request.namespace != 'team-b'"}}
	})
	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{withCondition}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	assert.Equal(t, Allowed, c.Admit(foreign).Decision, "the match condition leaves team-b out")
	assert.Equal(t, Denied, c.Admit(create(svc("team-c", "x", "10.0.10.12"))).Decision)

	nsSelected := vap(denyAll, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"restricted": "true"}}
	})
	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{nsSelected}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	assert.Equal(t, Allowed, c.Admit(foreign).Decision, "a namespace without the label is not selected")

	authz := vap("authorizer.group('').resource('services').check('create').allowed() || !has(object.spec.externalIPs)")
	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{authz}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	assert.Equal(t, Unknown, c.Admit(foreign).Decision, "depends on who asks")

	broken := vap("object.spec.externalIPs.nope(")
	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{broken}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	v := c.Admit(create(svc("team-b", "x")))
	assert.Equal(t, Denied, v.Decision, "a policy that does not compile refuses everything it matches with failurePolicy Fail: %s", v.Why)
	ignore := vap("object.spec.externalIPs.nope(", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	})
	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{ignore}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	assert.Equal(t, Allowed, c.Admit(create(svc("team-b", "x"))).Decision)

	params := vap(denyAll, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	})
	c = one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{params}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	assert.Equal(t, Unknown, c.Admit(foreign).Decision)
}

func TestKyvernoEnforceLetsViolatorsUpdateButRefusesNewClaims(t *testing.T) {
	o := load(t, corpusCase("kyverno-restrict-external-ips-enforce"))
	c := one(t, KyvernoPolicies(o.kyverno, o.webhooks, true))
	assert.True(t, c.Enforcing)
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
	adding := Request{Operation: Update, Object: svc("team-b", "x", "10.0.10.12"), OldObject: svc("team-b", "x")}
	assert.Equal(t, Denied, c.Admit(adding).Decision, "an update that adds externalIPs")
	v := c.Admit(update(svc("traefik", "traefik", nodeAddrs...)))
	assert.Equal(t, Allowed, v.Decision)
	assert.Contains(t, v.Why, "allowExistingViolations")
	assert.Equal(t, Denied, c.Admit(create(svc("traefik", "traefik", nodeAddrs...))).Decision, "re-creating our Service is refused")

	// allowExistingViolations false: our next update is refused too.
	pol := o.kyverno[0].DeepCopy()
	rules, _, _ := unstructured.NestedSlice(pol.Object, "spec", "rules")
	require.NoError(t, unstructured.SetNestedField(rules[0].(map[string]any), false, "validate", "allowExistingViolations"))
	require.NoError(t, unstructured.SetNestedSlice(pol.Object, rules, "spec", "rules"))
	c = one(t, KyvernoPolicies([]unstructured.Unstructured{*pol}, o.webhooks, true))
	assert.Equal(t, Denied, c.Admit(update(svc("traefik", "traefik", nodeAddrs...))).Decision)

	// Without Kyverno's webhook, nothing is applied.
	c = one(t, KyvernoPolicies(o.kyverno, nil, true))
	assert.False(t, c.Enforcing)
	assert.Contains(t, c.NotEnforcedWhy, "no Kyverno validating webhook covers Services")
}

func TestKyvernoAuditOnlyReports(t *testing.T) {
	o := load(t, corpusCase("kyverno-restrict-external-ips-audit"))
	c := one(t, KyvernoPolicies(o.kyverno, o.webhooks, true))
	assert.False(t, c.Enforcing)
	assert.Contains(t, c.NotEnforcedWhy, "Audit")
	foreign := create(svc("team-b", "x", "10.0.10.12"))
	assert.Equal(t, Denied, c.Violates(foreign).Decision)
	assert.Equal(t, Allowed, c.Admit(foreign).Decision)
}

func kyvernoPolicy(ns string, pattern map[string]any) unstructured.Unstructured {
	kind, md := "ClusterPolicy", map[string]any{"name": "restrict"}
	if ns != "" {
		kind, md["namespace"] = "Policy", ns
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": md,
		"spec": map[string]any{"validationFailureAction": "Enforce", "rules": []any{map[string]any{
			"name":     "ips",
			"match":    map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Service"}}}}},
			"validate": map[string]any{"pattern": map[string]any{"spec": pattern}},
		}}},
	}}
}

func TestKyvernoNamespacedPolicyAndAllowListPattern(t *testing.T) {
	deny := map[string]any{"X(externalIPs)": "null"}
	c := one(t, KyvernoPolicies([]unstructured.Unstructured{kyvernoPolicy("team-x", deny)}, nil, false))
	assert.Equal(t, Allowed, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision, "a Policy covers its namespace only")
	assert.Equal(t, Denied, c.Admit(create(svc("team-x", "x", "10.0.10.12"))).Decision)

	allowList := map[string]any{"=(externalIPs)": []any{"10.0.10.11 | 10.0.10.12 | 10.0.10.13"}}
	c = one(t, KyvernoPolicies([]unstructured.Unstructured{kyvernoPolicy("", allowList)}, nil, false))
	assert.Equal(t, Allowed, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision, "addresses only: anyone may claim ours")
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "10.0.10.99"))).Decision)

	wild := map[string]any{"=(externalIPs)": "10.0.10.*"}
	c = one(t, KyvernoPolicies([]unstructured.Unstructured{kyvernoPolicy("", wild)}, nil, false))
	assert.Equal(t, Allowed, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "192.168.1.1"))).Decision)

	other := map[string]any{"X(externalIPs)": "null", "type": "ClusterIP"}
	c = one(t, KyvernoPolicies([]unstructured.Unstructured{kyvernoPolicy("", other)}, nil, false))
	assert.Equal(t, Unknown, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
}

func TestGatekeeperLibraryComparesAddressesOnly(t *testing.T) {
	o := load(t, corpusCase("gatekeeper-k8sexternalips-allowlist-node-addresses"))
	c := one(t, GatekeeperConstraints(o.gkTmpl, o.gkCons, o.webhooks, true))
	assert.True(t, c.Enforcing)
	assert.Equal(t, Allowed, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision, "allowedIPs are our addresses: anyone may claim them")
	assert.Contains(t, c.Notes[0], "failurePolicy Ignore")

	o = load(t, corpusCase("gatekeeper-k8sexternalips-excluded-namespaces"))
	c = one(t, GatekeeperConstraints(o.gkTmpl, o.gkCons, o.webhooks, true))
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
	assert.Equal(t, Allowed, c.Admit(update(svc("traefik", "traefik", nodeAddrs...))).Decision, "excluded namespace")
	assert.Equal(t, Denied, c.Admit(update(svc("vpn", "openvpn", "10.0.10.14"))).Decision, "no grandfathering: another user of externalIPs cannot be updated")
}

func TestGatekeeperOtherRegoIsUnknown(t *testing.T) {
	o := load(t, corpusCase("gatekeeper-k8sexternalips-allowlist-node-addresses"))
	tmpl := o.gkTmpl[0].DeepCopy()
	require.NoError(t, unstructured.SetNestedSlice(tmpl.Object, []any{map[string]any{"target": "admission.k8s.gatekeeper.sh", "rego": "violation[{\"msg\": m}] { input.review.object.spec.externalIPs[_]; m := \"no\" }"}}, "spec", "targets"))
	c := one(t, GatekeeperConstraints([]unstructured.Unstructured{*tmpl}, o.gkCons, o.webhooks, true))
	assert.Equal(t, Unknown, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
}

func TestDenyServiceExternalIPsRefusesNewAddressesOnly(t *testing.T) {
	c := DenyServiceExternalIPs("Pod kube-system/kube-apiserver-cp-1")
	assert.Equal(t, Denied, c.Admit(create(svc("team-b", "x", "10.0.10.12"))).Decision)
	assert.Equal(t, Allowed, c.Admit(update(svc("traefik", "traefik", nodeAddrs...))).Decision)
	adding := Request{Operation: Update, Object: svc("traefik", "traefik", append(nodeAddrs, "10.0.10.14")...), OldObject: svc("traefik", "traefik", nodeAddrs...)}
	assert.Equal(t, Denied, c.Admit(adding).Decision)
}

func TestValidatingAdmissionPolicyMatchConditionsThatFailTakeTheFailurePolicy(t *testing.T) {
	const denyAll = "!has(object.spec.externalIPs)"
	foreign := create(svc("team-b", "x", "10.0.10.12"))
	withCondition := func(expression string, failurePolicy admissionregistrationv1.FailurePolicyType) Control {
		p := vap(denyAll, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: expression}}
			p.Spec.FailurePolicy = &failurePolicy
		})
		return one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{p}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(admissionregistrationv1.Deny)}))
	}
	for _, tc := range []struct {
		name, expression string
		fail, ignore     Decision
		why              string
	}{
		{"a condition that does not compile", "object.spec.nope(", Denied, Allowed, "a matchCondition fails"},
		{"a condition that fails to evaluate", "object.metadata.labels['team'] == 'b'", Denied, Allowed, "a matchCondition fails"},
		{"a condition that asks who sends the request", "authorizer.group('').resource('services').check('create').allowed()", Unknown, Unknown, "depends on who sends the request"},
		{"a condition that holds", "true", Denied, Denied, `validation "!has(object.spec.externalIPs)" is false`},
	} {
		v := withCondition(tc.expression, admissionregistrationv1.Fail).Admit(foreign)
		assert.Equal(t, tc.fail, v.Decision, "%s, failurePolicy Fail: %s", tc.name, v.Why)
		assert.Contains(t, v.Why, tc.why, tc.name)
		v = withCondition(tc.expression, admissionregistrationv1.Ignore).Admit(foreign)
		assert.Equal(t, tc.ignore, v.Decision, "%s, failurePolicy Ignore: %s", tc.name, v.Why)
	}

	// The binding's matchResources narrow the policy's.
	b := binding(admissionregistrationv1.Deny)
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"restricted": "true"}}}
	c := one(t, ValidatingAdmissionPolicies([]admissionregistrationv1.ValidatingAdmissionPolicy{vap(denyAll)}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}))
	v := c.Admit(foreign)
	assert.Equal(t, Allowed, v.Decision)
	assert.Contains(t, v.Why, "binding b's matchResources do not select it (namespaceSelector)")
}

// changeKyvernoRule changes the one rule of a policy built by kyvernoPolicy.
func changeKyvernoRule(t *testing.T, pol *unstructured.Unstructured, change func(rule map[string]any)) {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(pol.Object, "spec", "rules")
	require.Len(t, rules, 1)
	change(rules[0].(map[string]any))
	require.NoError(t, unstructured.SetNestedSlice(pol.Object, rules, "spec", "rules"))
}

func TestKyvernoFailureActionOverridesEnforceInTheirNamespacesOnly(t *testing.T) {
	deny := map[string]any{"X(externalIPs)": "null"}
	policyLevel := kyvernoPolicy("", deny)
	require.NoError(t, unstructured.SetNestedField(policyLevel.Object, "Audit", "spec", "validationFailureAction"))
	require.NoError(t, unstructured.SetNestedSlice(policyLevel.Object, []any{map[string]any{"action": "Enforce", "namespaces": []any{"restricted-*"}}}, "spec", "validationFailureActionOverrides"))
	ruleLevel := kyvernoPolicy("", deny)
	require.NoError(t, unstructured.SetNestedField(ruleLevel.Object, "Audit", "spec", "validationFailureAction"))
	changeKyvernoRule(t, &ruleLevel, func(rule map[string]any) {
		rule["validate"].(map[string]any)["failureActionOverrides"] = []any{map[string]any{"action": "Enforce", "namespaces": []any{"restricted-*"}}}
	})
	for name, pol := range map[string]unstructured.Unstructured{"validationFailureActionOverrides": policyLevel, "failureActionOverrides": ruleLevel} {
		c := one(t, KyvernoPolicies([]unstructured.Unstructured{pol}, nil, false))
		assert.True(t, c.Enforcing, "%s: it enforces somewhere", name)
		assert.Equal(t, Denied, c.Admit(create(svc("restricted-a", "x", "10.0.10.12"))).Decision, name)
		v := c.Admit(create(svc("team-b", "x", "10.0.10.12")))
		assert.Equal(t, Allowed, v.Decision, name)
		assert.Contains(t, v.Why, "it is in Audit for namespace team-b", name)
	}
}

func TestKyvernoRegistrationAndAdmissionSwitch(t *testing.T) {
	pol := kyvernoPolicy("", map[string]any{"X(externalIPs)": "null"})
	webhook := admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kyverno-resource-validating-webhook-cfg", Labels: map[string]string{"webhook.kyverno.io/managed-by": "kyverno"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.kyverno.svc-ignore", FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}}}}}},
	}
	c := one(t, KyvernoPolicies([]unstructured.Unstructured{pol}, []admissionregistrationv1.ValidatingWebhookConfiguration{webhook}, true))
	assert.True(t, c.Enforcing)
	require.Len(t, c.Notes, 1)
	assert.Contains(t, c.Notes[0], "validate.kyverno.svc-ignore has failurePolicy Ignore")

	require.NoError(t, unstructured.SetNestedField(pol.Object, false, "spec", "admission"))
	c = one(t, KyvernoPolicies([]unstructured.Unstructured{pol}, []admissionregistrationv1.ValidatingWebhookConfiguration{webhook}, true))
	assert.False(t, c.Enforcing)
	assert.Contains(t, c.NotEnforcedWhy, "spec.admission is false")
	assert.Contains(t, c.Remedy, `"admission":true`)
}

func TestKyvernoPatternForms(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern map[string]any
		ips     []string
		want    Decision
		why     string
	}{
		{"a required externalIPs without any", map[string]any{"externalIPs": "10.0.10.*"}, nil, Denied, "requires spec.externalIPs"},
		{"a conditional anchor without any", map[string]any{"=(externalIPs)": "10.0.10.*"}, nil, Allowed, "no externalIPs"},
		{"a negation anchor without any", map[string]any{"X(externalIPs)": "null"}, nil, Allowed, "no externalIPs"},
		{"a required externalIPs that match", map[string]any{"externalIPs": "10.0.10.*"}, []string{"10.0.10.12"}, Allowed, `every externalIP matches "10.0.10.*"`},
		{"a numeric operator", map[string]any{"=(externalIPs)": "<10"}, []string{"10.0.10.12"}, Unknown, "operators that are not evaluated"},
		{"a pattern that is not a string", map[string]any{"=(externalIPs)": int64(1)}, []string{"10.0.10.12"}, Unknown, "is not a string pattern"},
		{"another anchor", map[string]any{"^(externalIPs)": "10.0.10.*"}, []string{"10.0.10.12"}, Unknown, "is not evaluated"},
	} {
		c := one(t, KyvernoPolicies([]unstructured.Unstructured{kyvernoPolicy("", tc.pattern)}, nil, false))
		v := c.Admit(create(svc("team-b", "x", tc.ips...)))
		assert.Equal(t, tc.want, v.Decision, "%s: %s", tc.name, v.Why)
		assert.Contains(t, v.Why, tc.why, tc.name)
	}

	// A rule that selects requests by who sends them may or may not apply.
	pol := kyvernoPolicy("", map[string]any{"X(externalIPs)": "null"})
	changeKyvernoRule(t, &pol, func(rule map[string]any) {
		rule["match"] = map[string]any{"any": []any{map[string]any{"subjects": []any{map[string]any{"kind": "Group", "name": "devs"}}}}}
	})
	v := one(t, KyvernoPolicies([]unstructured.Unstructured{pol}, nil, false)).Admit(create(svc("team-b", "x", "10.0.10.12")))
	assert.Equal(t, Unknown, v.Decision)
	assert.Contains(t, v.Why, "selects requests by who sends them")
}
