package kubetest

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// HelperPolicy is the helper bundle's admission policy and its binding for namespace ns ("":
// every namespace), as `kubectl lanaccess manifests rbac-helpers` makes them: doctor creates
// no helper pod without them (podexec's checkPolicy). Only the parts that check reads are
// filled in.
func HelperPolicy(ns string) []runtime.Object {
	var match *admissionregistrationv1.MatchResources
	if ns != "" {
		match = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
		}}
	}
	return []runtime.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: podexec.HelperPolicyName}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: podexec.HelperPolicyName},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        podexec.HelperPolicyName,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    match,
			},
		},
	}
}

// ClientsetWithHelperPolicy is a fake clientset holding objs and the helper policy, bound in
// every namespace.
func ClientsetWithHelperPolicy(objs ...runtime.Object) *fake.Clientset {
	return fake.NewClientset(append(objs, HelperPolicy("")...)...)
}
