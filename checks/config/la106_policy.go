package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// The policy LA106 suggests reserves spec.externalIPs: each Service that uses externalIPs
// today (ours, their companions such as the Traefik chart's traefik-udp, and every other
// legitimate user such as a VPN Service) keeps exactly the addresses it has; any other
// Service, and any other address, is refused on CREATE and UPDATE. A ValidatingAdmissionPolicy
// is evaluated on every update with no exemption for objects that already violate, so the
// allow-list must name every current user, or their next update is refused. The Services
// LA106 flags (interception, node ports) are left out on purpose. The lab proves it on the real
// kube-apiserver (lab/e2e/admission_test.go: the printed text pasted into a shell is admitted;
// the API server then refuses a foreign claim and admits updates of ours and of the VPN
// Service).

// suggestedPolicyName is the name of the suggested policy and binding.
const suggestedPolicyName = "restrict-service-externalips"

// suggestedPolicy builds the ValidatingAdmissionPolicy and its Deny binding.
func suggestedPolicy(s *kube.Setup, legit []*corev1.Service) (admissionregistrationv1.ValidatingAdmissionPolicy, admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	users := append([]*corev1.Service{s.ProxyService, s.DNSService}, legit...)
	var entries []string
	var names []string
	for _, svc := range users {
		if len(svc.Spec.ExternalIPs) == 0 {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		if slices.Contains(names, key) {
			continue
		}
		names = append(names, key)
		entries = append(entries, strconv.Quote(key)+": "+celList(svc.Spec.ExternalIPs))
	}
	policy := admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: suggestedPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "allowed", Expression: "{\n  " + strings.Join(entries, ",\n  ") + "\n}"},
				{Name: "service", Expression: "request.namespace + '/' + object.metadata.name"},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0 ||\n" +
					"(variables.service in variables.allowed && object.spec.externalIPs.all(ip, ip in variables.allowed[variables.service]))",
				Message: "spec.externalIPs is reserved for " + strings.Join(names, ", ") + ", each on its own addresses (CVE-2020-8554)",
			}},
		},
	}
	return policy, denyBinding(suggestedPolicyName)
}

// suggestedPolicyRemedy is the suggested policy as a kubectl apply, saying whom it allows and
// whom it leaves out.
func suggestedPolicyRemedy(s *kube.Setup, legit []*corev1.Service) string {
	policy, binding := suggestedPolicy(s, legit)
	var b strings.Builder
	b.WriteString("# reserve spec.externalIPs for the Services that use them today, each on its own addresses (ValidatingAdmissionPolicy, Kubernetes >= 1.30)\n")
	for i := range s.Services {
		svc := &s.Services[i]
		if len(svc.Spec.ExternalIPs) == 0 || isSameService(svc, s.ProxyService) || isSameService(svc, s.DNSService) || slices.Contains(legit, svc) {
			continue
		}
		fmt.Fprintf(&b, "# %s is left out (LA106 flags it): its next update is refused until its externalIPs are removed\n", kubeobj.ServiceRef(svc))
	}
	b.WriteString(remedy.Apply(remedy.YAML(policy, binding)))
	return b.String()
}

// celList is a CEL list of string literals; the values are Kubernetes names and IP addresses,
// quoted as CEL strings by strconv (CEL's string literal escapes are Go's).
func celList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// denyBinding puts a ValidatingAdmissionPolicy in force.
func denyBinding(policy string) admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}
