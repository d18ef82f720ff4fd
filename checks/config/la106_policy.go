package config

import (
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

// The policy LA106 suggests reserves spec.externalIPs: our two Services and their companions
// (the Traefik chart's traefik-udp) keep exactly the addresses they have; any other Service,
// and any other address, is refused on CREATE and UPDATE. Every other current user (a VPN
// Service, or a tenant's Service on a public resolver's address) has its allow line written
// but commented out (a CEL comment): doctor cannot tell a legitimate user from an interception,
// the operator chooses (issue 23: allow-listing every current user wrote an existing
// interception into the fix as legitimate). A ValidatingAdmissionPolicy is evaluated on every
// update with no exemption for objects that already violate, so a user left out cannot be
// updated until its line is uncommented; LA106-OTHER-USER says so for each. The lab proves it
// on the real kube-apiserver (lab/e2e/admission_test.go: the printed text pasted into a shell is
// admitted; the API server then refuses a foreign claim, admits updates of ours, refuses the
// VPN Service's until its line is uncommented, then admits it).

// suggestedPolicyName is the name of the suggested policy and binding.
const suggestedPolicyName = "restrict-service-externalips"

// suggestedPolicy builds the ValidatingAdmissionPolicy and its Deny binding.
func suggestedPolicy(s *kube.Setup, u users) (admissionregistrationv1.ValidatingAdmissionPolicy, admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	var lines, names []string
	add := func(svc *corev1.Service, commented bool) {
		key := svc.Namespace + "/" + svc.Name
		if len(svc.Spec.ExternalIPs) == 0 || slices.Contains(names, key) {
			return
		}
		entry := strconv.Quote(key) + ": " + celList(svc.Spec.ExternalIPs) + ","
		if commented {
			// Names and addresses are validated by the API server (DNS labels, IP literals)
			// and quoted by strconv: nothing in them can end the comment.
			lines = append(lines, "// "+entry+" // outside the setup (LA106-OTHER-USER): uncomment if it may keep them")
			return
		}
		names = append(names, key)
		lines = append(lines, entry)
	}
	for _, svc := range append([]*corev1.Service{s.ProxyService, s.DNSService}, u.companions...) {
		add(svc, false)
	}
	for _, svc := range u.others {
		add(svc, true)
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
				{Name: "allowed", Expression: "{\n  " + strings.Join(lines, "\n  ") + "\n}"},
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
func suggestedPolicyRemedy(s *kube.Setup, u users) string {
	policy, binding := suggestedPolicy(s, u)
	var b strings.Builder
	b.WriteString("# reserve spec.externalIPs for the setup's Services, each on its own addresses (ValidatingAdmissionPolicy, Kubernetes >= 1.30)\n")
	for _, svc := range u.others {
		b.WriteString(remedy.Commentf("# %s uses externalIPs outside the setup: its allow line is commented out below; uncomment it before applying if it may keep them\n", kubeobj.ServiceRef(svc)))
	}
	for i := range s.Services {
		svc := &s.Services[i]
		if len(svc.Spec.ExternalIPs) == 0 || isSameService(svc, s.ProxyService) || isSameService(svc, s.DNSService) || slices.Contains(u.all(), svc) {
			continue
		}
		b.WriteString(remedy.Commentf("# %s is left out (LA106 flags it): its next update is refused until its externalIPs are removed\n", kubeobj.ServiceRef(svc)))
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
