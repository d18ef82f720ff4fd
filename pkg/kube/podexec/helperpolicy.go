package podexec

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelperPolicyName names the ValidatingAdmissionPolicy (and its binding) of the helper bundle
// (pkg/manifests/yaml/rbac-helpers.yaml) that narrows the privileged helper namespace to the
// helper's own pod shape.
const HelperPolicyName = "kubectl-lanaccess-helper-pods"

// CauseNoPolicy: the helper namespace's admission policy or its binding is missing, or does not
// cover the namespace. Without it, whoever may create pods there may run anything with the
// node's network (the namespace is Pod Security privileged): doctor creates no helper.
const CauseNoPolicy HelperCause = "no-policy"

// checkPolicy fails closed: a helper pod is created only when the bundle's policy and a binding
// of it that selects the helper namespace are in place, read from the API. kubectl apply goes
// on past a document the API server refuses, so on a cluster without ValidatingAdmissionPolicy
// v1 (before 1.30) the namespace and the Role exist while the policy does not (issue 23).
func (s *NodeShells) checkPolicy(ctx context.Context, node string) error {
	fail := func(msg string, err error) error {
		return &HelperError{Node: node, Cause: CauseNoPolicy, Err: err,
			Message: msg + ": without it the privileged helper namespace admits any pod, so no helper pod is created",
			Fix:     helperSetup + " (Kubernetes 1.30 or later: ValidatingAdmissionPolicy v1); or --no-helpers"}
	}
	adm := s.client.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Get(ctx, HelperPolicyName, metav1.GetOptions{}); err != nil {
		return fail(policyReadError("ValidatingAdmissionPolicy "+HelperPolicyName, err), err)
	}
	b, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, HelperPolicyName, metav1.GetOptions{})
	if err != nil {
		return fail(policyReadError("ValidatingAdmissionPolicyBinding "+HelperPolicyName, err), err)
	}
	if !bindingCovers(b, s.cfg.Namespace) {
		return fail(fmt.Sprintf("ValidatingAdmissionPolicyBinding %s does not deny in namespace %s", HelperPolicyName, s.cfg.Namespace), nil)
	}
	return nil
}

func policyReadError(what string, err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return what + " does not exist"
	case apierrors.IsForbidden(err):
		return what + " could not be read (not permitted), so it cannot be told to be in force"
	}
	return what + " could not be read (" + err.Error() + ")"
}

// bindingCovers: the binding denies, for the policy, in ns (selected by the label the API
// server puts on every namespace, as the bundle writes it).
func bindingCovers(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, ns string) bool {
	if b.Spec.PolicyName != HelperPolicyName {
		return false
	}
	deny := false
	for _, a := range b.Spec.ValidationActions {
		deny = deny || a == admissionregistrationv1.Deny
	}
	if !deny {
		return false
	}
	m := b.Spec.MatchResources
	if m == nil || m.NamespaceSelector == nil {
		return true // every namespace
	}
	sel := m.NamespaceSelector
	if len(sel.MatchExpressions) > 0 {
		return false // not the bundle's: not judged, not trusted
	}
	for k, v := range sel.MatchLabels {
		if k != corev1.LabelMetadataName || v != ns {
			return false
		}
	}
	return true
}
