package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Kyverno's validate rules, in the forms its policy library publishes for externalIPs
// (kyverno/policies best-practices/restrict-service-external-ips: a pattern with the negation
// anchor X(externalIPs), or an allow-list pattern; and the CEL variant). What Kyverno does
// (kyverno/kyverno):
//   - a rule's action is validate.failureAction, else spec.validationFailureAction; Audit (the
//     default) only reports (pkg/engine/handlers/validation/validate_resource.go);
//   - with Enforce, an UPDATE of a Service that already violated is let through when
//     validate.allowExistingViolations is true, its default (api/kyverno/v1/rule_types.go
//     HasValidateAllowExistingViolations; validate_resource.go validateOldObject);
//   - X(key) fails when the key is present; =(key) checks the value only when present; a
//     scalar pattern applies to every element of a list; "a | b" is an alternative, "*" and "?"
//     wildcards, "!" a negation (pkg/engine/anchor/handlers.go, pkg/engine/validate/validate.go,
//     pkg/engine/pattern/pattern.go);
//   - a namespaced Policy applies to its own namespace only;
//   - the rules run only while Kyverno's resource webhook covers Services.
// Other rule forms (deny conditions, anyPattern, foreach, patterns on other fields) are not
// evaluated: their verdict is unknown.

// KyvernoPolicies returns a Control per validate rule about externalIPs. webhooks are the
// cluster's ValidatingWebhookConfigurations; webhooksKnown is false when they could not be
// read (Kyverno's registration then cannot be checked).
func KyvernoPolicies(policies []unstructured.Unstructured, webhooks []admissionregistrationv1.ValidatingWebhookConfiguration, webhooksKnown bool) []Control {
	var out []Control
	for _, pol := range policies {
		rules, _, _ := unstructured.NestedSlice(pol.Object, "spec", "rules")
		for _, raw := range rules {
			rule, ok := raw.(map[string]any)
			if !ok || !kube.MentionsExternalIPs(rule["validate"]) {
				continue
			}
			out = append(out, kyvernoRule(pol, rule, webhooks, webhooksKnown))
		}
	}
	return out
}

func kyvernoRule(pol unstructured.Unstructured, rule map[string]any, webhooks []admissionregistrationv1.ValidatingWebhookConfiguration, webhooksKnown bool) Control {
	name, _ := rule["name"].(string)
	c := Control{What: fmt.Sprintf("Kyverno %s %s rule %s", pol.GetKind(), pol.GetName(), name)}
	if pol.GetNamespace() != "" {
		c.What = fmt.Sprintf("Kyverno Policy %s/%s rule %s", pol.GetNamespace(), pol.GetName(), name)
	}
	validate, _ := rule["validate"].(map[string]any)
	actions := kyvernoActionsOf(pol, validate)
	c.Enforcing = actions.enforcesSomewhere()
	kind := strings.ToLower(pol.GetKind()) + ".kyverno.io"
	c.Remove = remedy.Kubectl(pol.GetNamespace(), "delete", kind, pol.GetName())
	if !c.Enforcing {
		c.NotEnforcedWhy = "its failure action is Audit (Kyverno's default): violations are only reported"
		c.Remedy = remedy.MergePatch(pol.GetNamespace(), kind, pol.GetName(), map[string]any{"spec": map[string]any{"validationFailureAction": "Enforce"}}) +
			"   # newer Kyverno: each rule's validate.failureAction: Enforce"
	}
	if on, ok, _ := unstructured.NestedBool(pol.Object, "spec", "admission"); ok && !on {
		c.Enforcing, c.NotEnforcedWhy = false, joinWhy(c.NotEnforcedWhy, "spec.admission is false: Kyverno applies it in background scans only")
		c.Remedy = remedy.MergePatch(pol.GetNamespace(), kind, pol.GetName(), map[string]any{"spec": map[string]any{"admission": true}})
	}
	if webhooksKnown {
		kyvernoRegistration(&c, webhooks)
	}
	allowExisting := true
	if v, ok := validate["allowExistingViolations"].(bool); ok {
		allowExisting = v
	}
	k := kyvernoRuleCheck{namespace: pol.GetNamespace(), rule: rule, actions: actions, allowExisting: allowExisting, check: kyvernoCheck(validate)}
	c.violates = k.violates
	return c
}

// kyvernoRegistration tells c whether Kyverno's webhook puts the rule in force: the rule runs
// only while a Kyverno webhook covers Services, and not at all while Kyverno is down when that
// webhook ignores failures.
func kyvernoRegistration(c *Control, webhooks []admissionregistrationv1.ValidatingWebhookConfiguration) {
	wh, ok := kyvernoWebhook(webhooks)
	switch {
	case !ok:
		c.Enforcing = false
		c.NotEnforcedWhy = joinWhy(c.NotEnforcedWhy, "no Kyverno validating webhook covers Services: Kyverno is not running or has not registered its policies, so the rule is not applied")
		c.Remedy = "kubectl get validatingwebhookconfigurations -l webhook.kyverno.io/managed-by=kyverno   # is Kyverno running?"
	case wh.FailurePolicy != nil && *wh.FailurePolicy == admissionregistrationv1.Ignore:
		c.Notes = append(c.Notes, fmt.Sprintf("Kyverno's webhook %s has failurePolicy Ignore: while Kyverno is down, Services are not checked", wh.Name))
	}
}

// kyvernoActions are a rule's failure actions: its own (validate.failureAction, else the
// policy's validationFailureAction) and the overrides per namespace.
type kyvernoActions struct {
	action    string
	overrides []kyvernoOverride
}

func kyvernoActionsOf(pol unstructured.Unstructured, validate map[string]any) kyvernoActions {
	action, _ := validate["failureAction"].(string)
	if action == "" {
		action, _, _ = unstructured.NestedString(pol.Object, "spec", "validationFailureAction")
	}
	return kyvernoActions{action: action, overrides: kyvernoOverrides(pol, validate)}
}

// enforces says whether the rule refuses violations in namespace ns: the first override that
// names ns decides, else the rule's action.
func (a kyvernoActions) enforces(ns string) bool {
	for _, o := range a.overrides {
		if slices.ContainsFunc(o.namespaces, func(p string) bool { return wildcard(p, ns) }) {
			return strings.EqualFold(o.action, "enforce")
		}
	}
	return strings.EqualFold(a.action, "enforce")
}

// enforcesSomewhere says whether the rule refuses violations in some namespace.
func (a kyvernoActions) enforcesSomewhere() bool {
	return a.enforces("") || slices.ContainsFunc(a.overrides, func(o kyvernoOverride) bool { return strings.EqualFold(o.action, "enforce") })
}

// kyvernoRuleCheck is what one rule does with a request, as Kyverno applies it.
type kyvernoRuleCheck struct {
	namespace     string // a namespaced Policy's namespace; "" for a ClusterPolicy
	rule          map[string]any
	actions       kyvernoActions
	allowExisting bool
	check         func(obj *corev1.Service, r Request) Verdict
}

func (k kyvernoRuleCheck) violates(r Request) Verdict {
	if v, applies := k.applies(r); !applies {
		return v
	}
	v := k.check(r.Object, r)
	if v.Decision != Denied {
		return v
	}
	if !k.actions.enforces(r.Object.Namespace) && len(k.actions.overrides) > 0 {
		return allowed("it is in Audit for namespace %s", r.Object.Namespace)
	}
	if k.grandfathered(r) {
		return allowed("the Service already violated it and allowExistingViolations is true (Kyverno's default) (%s)", v.Why)
	}
	return v
}

// applies says whether the rule applies to r (its policy's namespace, its match and exclude
// blocks); when it does not, or that cannot be told, v says so.
func (k kyvernoRuleCheck) applies(r Request) (v Verdict, applies bool) {
	if k.namespace != "" && k.namespace != r.Object.Namespace {
		return allowed("a Policy of namespace %s applies to that namespace only", k.namespace), false
	}
	ok, why := kyvernoMatches(k.rule, r)
	switch {
	case !ok:
		return allowed("%s", why), false
	case why != "":
		return unknown("%s", why), false
	}
	return Verdict{}, true
}

// grandfathered says whether Kyverno lets the update r through because the stored Service
// already violated the rule (allowExistingViolations).
func (k kyvernoRuleCheck) grandfathered(r Request) bool {
	if r.Operation != Update || r.OldObject == nil || !k.allowExisting {
		return false
	}
	prev := r
	prev.Operation, prev.Object, prev.OldObject = Create, r.OldObject, nil
	ok, _ := kyvernoMatches(k.rule, prev)
	return ok && k.check(r.OldObject, prev).Decision == Denied
}

type kyvernoOverride struct {
	action     string
	namespaces []string
}

// kyvernoOverrides reads validationFailureActionOverrides (spec) and failureActionOverrides (rule).
func kyvernoOverrides(pol unstructured.Unstructured, validate map[string]any) []kyvernoOverride {
	var out []kyvernoOverride
	read := func(list []any) {
		for _, x := range list {
			m, _ := x.(map[string]any)
			a, _ := m["action"].(string)
			nss, _, _ := unstructured.NestedStringSlice(m, "namespaces")
			out = append(out, kyvernoOverride{action: a, namespaces: nss})
		}
	}
	if l, ok := validate["failureActionOverrides"].([]any); ok {
		read(l)
	}
	l, _, _ := unstructured.NestedSlice(pol.Object, "spec", "validationFailureActionOverrides")
	read(l)
	return out
}

// kyvernoWebhook finds the webhook through which Kyverno validates Services.
func kyvernoWebhook(webhooks []admissionregistrationv1.ValidatingWebhookConfiguration) (admissionregistrationv1.ValidatingWebhook, bool) {
	for _, cfg := range webhooks {
		if cfg.Labels["webhook.kyverno.io/managed-by"] != "kyverno" && !strings.HasPrefix(cfg.Name, "kyverno-resource-validating") {
			continue
		}
		for _, h := range cfg.Webhooks {
			if coversServices(h.Rules) {
				return h, true
			}
		}
	}
	return admissionregistrationv1.ValidatingWebhook{}, false
}

// coversServices reports whether webhook rules cover CREATE or UPDATE of core Services.
func coversServices(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		groups := slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")
		res := slices.Contains(r.Resources, "services") || slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "*/*")
		ops := slices.ContainsFunc(r.Operations, func(o admissionregistrationv1.OperationType) bool {
			return o == admissionregistrationv1.Create || o == admissionregistrationv1.Update || o == admissionregistrationv1.OperationAll
		})
		if groups && res && ops {
			return true
		}
	}
	return false
}

// kyvernoMatches applies the rule's match and exclude blocks to r. ok false: the rule does not
// apply (why says so); ok true with a why: it may apply, which cannot be told.
func kyvernoMatches(rule map[string]any, r Request) (bool, string) {
	match, _ := rule["match"].(map[string]any)
	if match == nil {
		return false, "the rule has no match block"
	}
	m, unsure := filterBlock(match, r, false)
	if !m {
		return false, "the rule's match block does not select it"
	}
	if exclude, ok := rule["exclude"].(map[string]any); ok {
		if ex, _ := filterBlock(exclude, r, true); ex {
			return false, "the rule's exclude block exempts it"
		}
	}
	return true, unsure
}

// filterBlock evaluates a match or exclude block (any, all, or the legacy resources). For an
// exclude block, a filter on subjects or roles does not exempt the hypothetical requester.
func filterBlock(block map[string]any, r Request, exclude bool) (bool, string) {
	filters := func(key string) []map[string]any {
		l, _ := block[key].([]any)
		var out []map[string]any
		for _, x := range l {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	one := func(f map[string]any) (bool, string) {
		for _, k := range []string{"subjects", "roles", "clusterRoles"} {
			if _, ok := f[k]; ok {
				if exclude {
					return false, ""
				}
				return true, "the rule selects requests by who sends them"
			}
		}
		rd, _ := f["resources"].(map[string]any)
		return resourceMatches(rd, r), ""
	}
	if any := filters("any"); len(any) > 0 {
		for _, f := range any {
			if ok, why := one(f); ok {
				return true, why
			}
		}
		return false, ""
	}
	if all := filters("all"); len(all) > 0 {
		var why string
		for _, f := range all {
			ok, w := one(f)
			if !ok {
				return false, ""
			}
			if w != "" {
				why = w
			}
		}
		return true, why
	}
	return one(block)
}

// resourceMatches applies a ResourceDescription (kinds, names, namespaces, operations,
// selector, namespaceSelector, annotations) to r.
func resourceMatches(rd map[string]any, r Request) bool {
	if rd == nil {
		return false
	}
	str := func(key string) []string {
		l, _, _ := unstructured.NestedStringSlice(rd, key)
		return l
	}
	kinds := str("kinds")
	if !slices.ContainsFunc(kinds, func(k string) bool {
		last := k[strings.LastIndex(k, "/")+1:]
		return last == "Service" || last == "*"
	}) {
		return false
	}
	if names := str("names"); len(names) > 0 && !slices.ContainsFunc(names, func(p string) bool { return wildcard(p, r.Object.Name) }) {
		return false
	}
	if name, _ := rd["name"].(string); name != "" && !wildcard(name, r.Object.Name) {
		return false
	}
	if nss := str("namespaces"); len(nss) > 0 && !slices.ContainsFunc(nss, func(p string) bool { return wildcard(p, r.Object.Namespace) }) {
		return false
	}
	if ops := str("operations"); len(ops) > 0 && !slices.Contains(ops, string(r.Operation)) {
		return false
	}
	for key, target := range map[string]map[string]string{"selector": r.Object.Labels, "namespaceSelector": r.NamespaceObject().Labels} {
		raw, ok := rd[key].(map[string]any)
		if !ok {
			continue
		}
		var ls metav1.LabelSelector
		if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls) != nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil || !sel.Matches(labels.Set(target)) {
			return false
		}
	}
	if ann, ok := rd["annotations"].(map[string]any); ok {
		for k, v := range ann {
			p, _ := v.(string)
			if got, ok := r.Object.Annotations[k]; !ok || !wildcard(p, got) {
				return false
			}
		}
	}
	return true
}

// kyvernoCheck returns how the rule judges a Service: its pattern on spec.externalIPs, or its
// CEL expressions; any other form is unknown.
func kyvernoCheck(validate map[string]any) func(obj *corev1.Service, r Request) Verdict {
	if cel, ok := validate["cel"].(map[string]any); ok {
		return kyvernoCEL(cel)
	}
	key, want, why := externalIPsPattern(validate)
	if why != "" {
		return func(*corev1.Service, Request) Verdict { return unknown("%s", why) }
	}
	return func(obj *corev1.Service, _ Request) Verdict { return kyvernoPattern(key, want, obj.Spec.ExternalIPs) }
}

// externalIPsPattern reads a validate pattern on spec.externalIPs alone: its key (with its
// anchor) and its value. why says why the rule is not such a pattern.
func externalIPsPattern(validate map[string]any) (key string, want any, why string) {
	pattern, ok := validate["pattern"].(map[string]any)
	if !ok || len(pattern) != 1 {
		return "", nil, "the rule is not a pattern on spec.externalIPs alone (deny, anyPattern, foreach... are not evaluated)"
	}
	spec, ok := pattern["spec"].(map[string]any)
	if !ok || len(spec) != 1 {
		return "", nil, "the rule's pattern checks more than spec.externalIPs, which is not evaluated"
	}
	for k, v := range spec {
		key, want = k, v
	}
	return key, want, ""
}

// kyvernoPattern applies the pattern entry key: want to a Service's externalIPs.
func kyvernoPattern(key string, want any, ips []string) Verdict {
	switch key {
	case "X(externalIPs)":
		if len(ips) > 0 {
			return denied("the negation anchor X(externalIPs) refuses any externalIPs")
		}
		return allowed("no externalIPs")
	case "=(externalIPs)", "externalIPs":
		if len(ips) == 0 {
			if key == "externalIPs" {
				return denied("the pattern requires spec.externalIPs")
			}
			return allowed("no externalIPs")
		}
		return addressesMatch(want, ips)
	}
	return unknown("the pattern's key %q is not evaluated", key)
}

// addressesMatch applies an externalIPs pattern value to every address (a list pattern applies
// its first element to every element).
func addressesMatch(want any, ips []string) Verdict {
	p := want
	if l, ok := want.([]any); ok && len(l) > 0 {
		p = l[0]
	}
	s, ok := p.(string)
	if !ok {
		return unknown("the externalIPs pattern %v is not a string pattern", want)
	}
	for _, ip := range ips {
		m, known := stringPattern(s, ip)
		if !known {
			return unknown("the externalIPs pattern %q uses operators that are not evaluated", s)
		}
		if !m {
			return denied("%s does not match the pattern %q", ip, s)
		}
	}
	return allowed("every externalIP matches %q", s)
}

// stringPattern applies a Kyverno string pattern to s: alternatives "|", conjunctions "&",
// "!" negation, wildcards. known is false for the numeric and range operators.
func stringPattern(pattern, s string) (match, known bool) {
	if pattern == s {
		return true, true
	}
	for alt := range strings.SplitSeq(pattern, "|") {
		all := true
		for cond := range strings.SplitSeq(strings.TrimSpace(alt), "&") {
			cond = strings.TrimSpace(cond)
			neg := strings.HasPrefix(cond, "!")
			cond = strings.TrimSpace(strings.TrimPrefix(cond, "!"))
			if strings.ContainsAny(cond, "<>") || strings.Contains(cond, "-") && !strings.ContainsAny(cond, ".:") {
				return false, false
			}
			if wildcard(cond, s) == neg {
				all = false
			}
		}
		if all {
			return true, true
		}
	}
	return false, true
}

// wildcard matches s against a pattern where "*" is any run and "?" any one character
// (Kyverno's ext/wildcard, Gatekeeper's prefix and suffix globs).
func wildcard(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcard(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcard(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && wildcard(pattern[1:], s[1:])
}

// kyvernoCEL evaluates validate.cel.expressions (object, oldObject, request, namespaceObject).
func kyvernoCEL(cel map[string]any) func(*corev1.Service, Request) Verdict {
	if _, ok := cel["paramKind"]; ok {
		return func(*corev1.Service, Request) Verdict { return unknown("the rule reads parameters that are not read") }
	}
	var exprs []expr
	list, _ := cel["expressions"].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		if e, ok := m["expression"].(string); ok {
			exprs = append(exprs, expr(e))
		}
	}
	var vars []variable
	vl, _ := cel["variables"].([]any)
	for _, x := range vl {
		m, _ := x.(map[string]any)
		n, _ := m["name"].(string)
		e, _ := m["expression"].(string)
		vars = append(vars, variable{name: n, expression: e})
	}
	prog, err := compile(vars, exprs, false)
	return func(obj *corev1.Service, r Request) Verdict {
		if err != nil {
			return unknown("its CEL does not compile here: %v", err)
		}
		r.Object = obj
		res, err := prog.run(context.Background(), r)
		if err != nil {
			return unknown("its CEL fails: %v", err)
		}
		for _, o := range res {
			if o.err != nil {
				return unknown("expression %q fails: %v", o.expr, o.err)
			}
			if !o.value {
				return denied("expression %q is false", o.expr)
			}
		}
		return allowed("every expression holds")
	}
}
