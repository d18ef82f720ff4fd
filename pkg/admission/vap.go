package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ValidatingAdmissionPolicies returns a Control per binding of each policy (a policy without a
// binding is not in force). What a policy does with a request follows the API server
// (k8s.io/apiserver pkg/admission/plugin/policy): the policy's matchConstraints and the
// binding's matchResources select the request (resource rules, namespace and object
// selectors), matchConditions must all be true, then every validation must be true; an
// expression that fails to compile or to evaluate takes the failurePolicy (Fail by default:
// refused). Only validationActions Deny refuses; Warn and Audit only report.
func ValidatingAdmissionPolicies(policies []admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding) []Control {
	var out []Control
	for i := range policies {
		p := &policies[i]
		bound := false
		for j := range bindings {
			b := &bindings[j]
			if b.Spec.PolicyName != p.Name {
				continue
			}
			bound = true
			out = append(out, vapControl(p, b))
		}
		if !bound {
			c := vapControl(p, nil)
			out = append(out, c)
		}
	}
	return out
}

func vapControl(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) Control {
	c := vapEnforcement(p, b)
	c.violates = compileVAP(p, b).violates
	return c
}

// vapEnforcement is what the binding makes of the policy: it enforces when a binding puts it in
// force with the Deny action; else NotEnforcedWhy and Remedy say why not and what would.
func vapEnforcement(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) Control {
	c := Control{What: "ValidatingAdmissionPolicy " + p.Name}
	if b != nil {
		c.Remove = remedy.Kubectl("", "delete", "validatingadmissionpolicybinding", b.Name) + "\n"
	}
	c.Remove += remedy.Kubectl("", "delete", "validatingadmissionpolicy", p.Name)
	switch {
	case b == nil:
		c.NotEnforcedWhy = "no ValidatingAdmissionPolicyBinding puts it in force"
		c.Remedy = remedy.Apply(remedy.YAML(admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: p.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}))
	case !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny):
		c.What += " (binding " + b.Name + ")"
		c.NotEnforcedWhy = fmt.Sprintf("binding %s only has validationActions %v", b.Name, b.Spec.ValidationActions)
		c.Remedy = remedy.MergePatch("", "validatingadmissionpolicybinding", b.Name, map[string]any{"spec": map[string]any{"validationActions": []string{"Deny"}}})
	default:
		c.What += " (binding " + b.Name + ")"
		c.Enforcing = true
	}
	return c
}

// compiledVAP is a policy and its binding (nil: none), compiled as the API server compiles them.
type compiledVAP struct {
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// validations and conditions (nil: no matchConditions) are the compiled expressions, or
	// the error that compiling them gave.
	validations, conditions       *program
	validationsErr, conditionsErr error
}

func compileVAP(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) compiledVAP {
	vars := make([]variable, 0, len(p.Spec.Variables))
	for _, v := range p.Spec.Variables {
		vars = append(vars, variable{name: v.Name, expression: v.Expression})
	}
	validations := make([]expr, 0, len(p.Spec.Validations))
	for _, v := range p.Spec.Validations {
		validations = append(validations, expr(v.Expression))
	}
	conditions := make([]expr, 0, len(p.Spec.MatchConditions))
	for _, m := range p.Spec.MatchConditions {
		conditions = append(conditions, expr(m.Expression))
	}
	hasParams := p.Spec.ParamKind != nil
	c := compiledVAP{policy: p, binding: b}
	c.validations, c.validationsErr = compile(vars, validations, hasParams)
	if len(conditions) > 0 {
		c.conditions, c.conditionsErr = compile(vars, conditions, hasParams)
	}
	return c
}

// violates says what the policy does with r, in the API server's order: the policy's and the
// binding's resources select r, every matchCondition is true, then every validation must be.
func (c compiledVAP) violates(r Request) Verdict {
	if ok, why := matchResources(c.policy.Spec.MatchConstraints, r); !ok {
		return allowed("its matchConstraints do not select it (%s)", why)
	}
	if c.binding != nil && c.binding.Spec.MatchResources != nil {
		if ok, why := matchResources(c.binding.Spec.MatchResources, r); !ok {
			return allowed("binding %s's matchResources do not select it (%s)", c.binding.Name, why)
		}
	}
	if k := c.policy.Spec.ParamKind; k != nil {
		return unknown("it reads parameters (%s %s) that are not read", k.APIVersion, k.Kind)
	}
	ctx := context.Background()
	if v, applies := c.matchConditions(ctx, r); !applies {
		return v
	}
	return c.validate(ctx, r)
}

// matchConditions evaluates the matchConditions on r: applies is true when they all hold (or
// there are none); else v says what the policy does with r.
func (c compiledVAP) matchConditions(ctx context.Context, r Request) (v Verdict, applies bool) {
	if c.conditionsErr != nil {
		return c.failed("a matchCondition", c.conditionsErr), false
	}
	if c.conditions == nil {
		return Verdict{}, true
	}
	res, err := c.conditions.run(ctx, r)
	if err != nil {
		return c.failed("the matchConditions", err), false
	}
	var errs []error
	for _, o := range res {
		switch {
		case o.err == errAuthorizer:
			return unknown("a matchCondition depends on who sends the request"), false
		case o.err != nil:
			errs = append(errs, o.err)
		case !o.value:
			return allowed("matchCondition %q is false", o.expr), false
		}
	}
	if len(errs) > 0 {
		return c.failed("a matchCondition", errs[0]), false
	}
	return Verdict{}, true
}

// validate evaluates the validations on r: the first that is false refuses it.
func (c compiledVAP) validate(ctx context.Context, r Request) Verdict {
	if c.validationsErr != nil {
		return c.failed("a validation", c.validationsErr)
	}
	res, err := c.validations.run(ctx, r)
	if err != nil {
		return c.failed("the validations", err)
	}
	for _, o := range res {
		switch {
		case o.err == errAuthorizer:
			return unknown("validation %q depends on who sends the request", o.expr)
		case o.err != nil:
			return c.failed(fmt.Sprintf("validation %q", o.expr), o.err)
		case !o.value:
			return denied("validation %q is false", o.expr)
		}
	}
	return allowed("every validation holds")
}

// failed is the policy's verdict when what (an expression, a group of them) fails to compile
// or to evaluate: its failurePolicy decides (Fail by default).
func (c compiledVAP) failed(what string, err error) Verdict {
	if fp := c.policy.Spec.FailurePolicy; fp == nil || *fp == admissionregistrationv1.Fail {
		return denied("%s fails (%v) and failurePolicy is Fail", what, err)
	}
	return allowed("%s fails (%v) and failurePolicy is Ignore", what, err)
}

// matchResources applies a MatchResources to a Service request (k8s.io/apiserver
// pkg/admission/plugin/policy/matching: namespaceSelector and objectSelector on the labels,
// resourceRules and excludeResourceRules on operation, group, version, resource and name).
// A nil MatchResources selects everything.
func matchResources(m *admissionregistrationv1.MatchResources, r Request) (bool, string) {
	if m == nil {
		return true, ""
	}
	if m.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(m.NamespaceSelector)
		if err != nil || !sel.Matches(labels.Set(r.NamespaceObject().Labels)) {
			return false, "namespaceSelector"
		}
	}
	if m.ObjectSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(m.ObjectSelector)
		obj := r.Object
		if r.Operation == Update && r.OldObject != nil && err == nil && !sel.Matches(labels.Set(obj.Labels)) {
			obj = r.OldObject // the object selector matches the new or the old object
		}
		if err != nil || !sel.Matches(labels.Set(obj.Labels)) {
			return false, "objectSelector"
		}
	}
	if len(m.ResourceRules) > 0 && !slices.ContainsFunc(m.ResourceRules, func(rule admissionregistrationv1.NamedRuleWithOperations) bool { return ruleMatches(rule, r) }) {
		return false, "no resourceRule covers " + strings.ToLower(string(r.Operation)) + " of services"
	}
	if slices.ContainsFunc(m.ExcludeResourceRules, func(rule admissionregistrationv1.NamedRuleWithOperations) bool { return ruleMatches(rule, r) }) {
		return false, "an excludeResourceRule covers it"
	}
	return true, ""
}

func ruleMatches(rule admissionregistrationv1.NamedRuleWithOperations, r Request) bool {
	ops := make([]string, len(rule.Operations))
	for i, o := range rule.Operations {
		ops[i] = string(o)
	}
	anyOf := func(list []string, want ...string) bool {
		return slices.ContainsFunc(list, func(x string) bool { return slices.Contains(want, x) })
	}
	if !matchesOperation(ops, r.Operation) || len(ops) == 0 {
		return false
	}
	if !anyOf(rule.APIGroups, "", "*") || !anyOf(rule.APIVersions, "v1", "*") || !anyOf(rule.Resources, "services", "*", "*/*") {
		return false
	}
	if rule.Scope != nil && *rule.Scope == admissionregistrationv1.ClusterScope {
		return false
	}
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, r.Object.Name)
}
