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
	fail := p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy == admissionregistrationv1.Fail
	var vars []variable
	for _, v := range p.Spec.Variables {
		vars = append(vars, variable{name: v.Name, expression: v.Expression})
	}
	hasParams := p.Spec.ParamKind != nil
	var validations, conditions []expr
	for _, v := range p.Spec.Validations {
		validations = append(validations, expr(v.Expression))
	}
	for _, m := range p.Spec.MatchConditions {
		conditions = append(conditions, expr(m.Expression))
	}
	valProg, valErr := compile(vars, validations, hasParams)
	var condProg *program
	var condErr error
	if len(conditions) > 0 {
		condProg, condErr = compile(vars, conditions, hasParams)
	}
	onError := func(what string, err error) Verdict {
		if fail {
			return denied("%s fails (%v) and failurePolicy is Fail", what, err)
		}
		return allowed("%s fails (%v) and failurePolicy is Ignore", what, err)
	}
	c.violates = func(r Request) Verdict {
		if ok, why := matchResources(p.Spec.MatchConstraints, r); !ok {
			return allowed("its matchConstraints do not select it (%s)", why)
		}
		if b != nil && b.Spec.MatchResources != nil {
			if ok, why := matchResources(b.Spec.MatchResources, r); !ok {
				return allowed("binding %s's matchResources do not select it (%s)", b.Name, why)
			}
		}
		if hasParams {
			return unknown("it reads parameters (%s %s) that are not read", p.Spec.ParamKind.APIVersion, p.Spec.ParamKind.Kind)
		}
		ctx := context.Background()
		if condErr != nil {
			return onError("a matchCondition", condErr)
		}
		if condProg != nil {
			res, err := condProg.run(ctx, r)
			if err != nil {
				return onError("the matchConditions", err)
			}
			var errs []error
			for _, o := range res {
				if o.err == errAuthorizer {
					return unknown("a matchCondition depends on who sends the request")
				}
				if o.err != nil {
					errs = append(errs, o.err)
					continue
				}
				if !o.value {
					return allowed("matchCondition %q is false", o.expr)
				}
			}
			if len(errs) > 0 {
				return onError("a matchCondition", errs[0])
			}
		}
		if valErr != nil {
			return onError("a validation", valErr)
		}
		res, err := valProg.run(ctx, r)
		if err != nil {
			return onError("the validations", err)
		}
		for _, o := range res {
			switch {
			case o.err == errAuthorizer:
				return unknown("validation %q depends on who sends the request", o.expr)
			case o.err != nil:
				return onError(fmt.Sprintf("validation %q", o.expr), o.err)
			case !o.value:
				return denied("validation %q is false", o.expr)
			}
		}
		return allowed("every validation holds")
	}
	return c
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
