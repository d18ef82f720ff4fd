package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ExternalIPsSecurity is LA106. Anyone who may create or edit a Service may claim any address
// in spec.externalIPs and receive the traffic meant for it (CVE-2020-8554, not fixable in
// Kubernetes itself): no other Service may claim our addresses on our ports, and on a shared
// cluster an admission control should reserve the field. The field is also deprecated
// (KEP-5707): kube-proxy is planned to stop implementing it by default.
func ExternalIPsSecurity(env *Env) engine.Check {
	return check(env, "LA106", externalIPsSecurity)
}

// protectionObject is the Object of findings about admission control.
const protectionObject = "admission control (CVE-2020-8554)"

func externalIPsSecurity(s *kube.Setup) engine.Outcome {
	var findings []engine.Finding
	findings = append(findings, interceptionFindings(s)...)
	prot, unknown := protectionFindings(s)
	findings = append(findings, prot...)
	findings = append(findings, kubeProxyFindings(s)...)
	findings = append(findings, deprecationFinding(s))
	var unread []string
	if err := s.Unread(kube.ReadKey("", "services", "")); err != nil {
		unread = append(unread, "Services in other namespaces could not be read, so interception by them is not checked: "+err.Error())
	}
	unread = append(unread, unknown...)
	return engine.Partial("LA106", findings, strings.Join(unread, "; "))
}

// claim is one address:port/protocol a Service makes kube-proxy capture.
type claim struct {
	Addr  netip.Addr
	Port  int32
	Proto corev1.Protocol
}

func (c claim) String() string { return fmt.Sprintf("%s:%d/%s", c.Addr, c.Port, c.Proto) }

// serviceClaims lists what svc captures: its externalIPs and load-balancer addresses, on
// each of its ports.
func serviceClaims(svc *corev1.Service) []claim {
	var addrs []netip.Addr
	add := func(raw string) {
		if f := readAddr(raw); f.Addr.IsValid() && !slices.Contains(addrs, f.Addr) {
			addrs = append(addrs, f.Addr)
		}
	}
	for _, ip := range svc.Spec.ExternalIPs {
		add(ip)
	}
	if svc.Spec.LoadBalancerIP != "" {
		add(svc.Spec.LoadBalancerIP)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			add(in.IP)
		}
	}
	var out []claim
	for _, a := range addrs {
		for _, p := range svc.Spec.Ports {
			out = append(out, claim{Addr: a, Port: p.Port, Proto: kube.Protocol(p.Protocol)})
		}
	}
	return out
}

func interceptionFindings(s *kube.Setup) []engine.Finding {
	ours := map[claim]string{}
	ourAddrs := map[netip.Addr]bool{}
	for _, svc := range []*corev1.Service{s.ProxyService, s.DNSService} {
		for _, c := range serviceClaims(svc) {
			ours[c] = kube.ServiceRef(svc)
			ourAddrs[c.Addr] = true
		}
	}
	var out []engine.Finding
	for i := range s.Services {
		svc := &s.Services[i]
		if isSameService(svc, s.ProxyService) || isSameService(svc, s.DNSService) {
			continue
		}
		var clash, sameAddr []string
		victims := map[string]bool{}
		for _, c := range serviceClaims(svc) {
			if owner, ok := ours[c]; ok {
				clash = append(clash, c.String())
				victims[owner] = true
			} else if ourAddrs[c.Addr] {
				sameAddr = append(sameAddr, c.String())
			}
		}
		switch {
		case len(clash) > 0:
			out = append(out, engine.Finding{Code: "LA106-INTERCEPTION", Severity: engine.SeverityFail, Object: kube.ServiceRef(svc),
				Message:  fmt.Sprintf("claims %s, which %s also exposes: kube-proxy may hand LAN traffic for our addresses to this Service (interception, CVE-2020-8554)", strings.Join(clash, ", "), strings.Join(keysOf(victims), " and ")),
				Evidence: map[string]any{"claims": clash, "externalIPs": svc.Spec.ExternalIPs},
				Remediation: remedy.Kubectl(svc.Namespace, "get", "service", svc.Name, "-o", "yaml") + "   # who owns it? then, if it has no business on these addresses:\n" +
					remedy.JSONPatch(svc.Namespace, "service", svc.Name, remedy.PatchOp{Op: "remove", Path: "/spec/externalIPs"})})
		case len(sameAddr) > 0:
			out = append(out, engine.Finding{Code: "LA106-SHARED-ADDRESS", Severity: engine.SeverityInfo, Object: kube.ServiceRef(svc),
				Message:  fmt.Sprintf("uses our addresses on other ports (%s): no clash today, but it shows who may claim them", strings.Join(sameAddr, ", ")),
				Evidence: map[string]any{"claims": sameAddr}})
		}
	}
	return out
}

func isSameService(a, b *corev1.Service) bool {
	return b != nil && a.Namespace == b.Namespace && a.Name == b.Name
}

// protection is one admission control that may reserve spec.externalIPs.
type protection struct {
	What     string // "ValidatingAdmissionPolicy restrict-service-externalips"
	Enforced bool
	Why      string // why it does not enforce, when it does not
	// Remedy makes it enforce (for controls that do not).
	Remedy string
}

// protectionFindings reports the controls found. unknown lists sources that could not be
// read, when no enforcing control was found among the others.
func protectionFindings(s *kube.Setup) ([]engine.Finding, []string) {
	prots := findProtections(s)
	var enforced, weak []protection
	for _, p := range prots {
		if p.Enforced {
			enforced = append(enforced, p)
		} else {
			weak = append(weak, p)
		}
	}
	if len(enforced) > 0 {
		var names []string
		for _, p := range enforced {
			names = append(names, p.What)
		}
		return []engine.Finding{{Code: "LA106-ADMISSION-ENFORCED", Severity: engine.SeverityInfo, Object: protectionObject,
			Message:  "spec.externalIPs is restricted by " + strings.Join(names, ", "),
			Evidence: map[string]any{"enforcedBy": names}}}, nil
	}
	var out []engine.Finding
	for _, p := range weak {
		out = append(out, engine.Finding{Code: "LA106-ADMISSION-NOT-ENFORCED", Severity: engine.SeverityWarn, Object: protectionObject,
			Message:     fmt.Sprintf("%s mentions externalIPs but does not enforce: %s", p.What, p.Why),
			Evidence:    map[string]any{"control": p.What},
			Remediation: p.Remedy})
	}
	var unknown []string
	for _, key := range protectionReads(s) {
		if err := s.Unread(key); err != nil {
			unknown = append(unknown, fmt.Sprintf("could not read %s, so a control there is not seen: %v", key, err))
		}
	}
	if len(weak) == 0 && len(unknown) == 0 {
		out = append(out, engine.Finding{Code: "LA106-ADMISSION", Severity: engine.SeverityWarn, Object: protectionObject,
			Message: "nothing restricts spec.externalIPs (no ValidatingAdmissionPolicy, Kyverno or Gatekeeper policy, nor externalip-webhook mentions it): anyone who may edit a Service in any namespace can claim these addresses and intercept the LAN's traffic. " +
				"The DenyServiceExternalIPs admission plugin cannot be seen through the API; it is unlikely to be on, since it also refuses every new externalIP, this setup's included",
			Evidence:    map[string]any{"checked": []string{"ValidatingAdmissionPolicies", "ValidatingWebhookConfigurations", "Kyverno policies", "Gatekeeper constraints"}},
			Remediation: admissionPolicyYAML(s)})
	}
	return out, unknown
}

// protectionReads are the reads protection detection relies on.
func protectionReads(s *kube.Setup) []string {
	const g = "admissionregistration.k8s.io"
	keys := []string{kube.ReadKey(g, "validatingwebhookconfigurations", ""), kube.ReadKey(g, "validatingadmissionpolicies", ""), kube.ReadKey(g, "validatingadmissionpolicybindings", "")}
	for _, r := range kube.KyvernoPolicyResources() {
		keys = append(keys, r.Key())
	}
	keys = append(keys, kube.GatekeeperTemplates().Key())
	return keys
}

func findProtections(s *kube.Setup) []protection {
	var out []protection
	for i := range s.AdmissionPolicies {
		out = append(out, admissionPolicyProtection(&s.AdmissionPolicies[i], s.AdmissionPolicyBindings)...)
	}
	for _, w := range s.ValidatingWebhooks {
		if p, ok := webhookProtection(w); ok {
			out = append(out, p)
		}
	}
	for _, pol := range s.KyvernoPolicies {
		if p, ok := kyvernoProtection(pol); ok {
			out = append(out, p)
		}
	}
	for _, c := range s.GatekeeperConstraints {
		action, _, _ := unstructured.NestedString(c.Object, "spec", "enforcementAction")
		p := protection{What: fmt.Sprintf("Gatekeeper %s %s", c.GetKind(), c.GetName()), Enforced: action == "" || strings.EqualFold(action, "deny")}
		if !p.Enforced {
			p.Why = "enforcementAction is " + action
			p.Remedy = remedy.MergePatch("", strings.ToLower(c.GetKind())+"."+kube.GatekeeperConstraint(c.GetKind()).GVR.Group, c.GetName(),
				map[string]any{"spec": map[string]any{"enforcementAction": "deny"}})
		}
		out = append(out, p)
	}
	return out
}

func admissionPolicyProtection(vap *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding) []protection {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vap)
	if err != nil || !kube.MentionsExternalIPs(obj["spec"]) {
		return nil
	}
	p := protection{What: "ValidatingAdmissionPolicy " + vap.Name, Why: "no ValidatingAdmissionPolicyBinding puts it in force",
		Remedy: remedy.Apply(remedy.YAML(denyBinding(vap.Name)))}
	for _, b := range bindings {
		if b.Spec.PolicyName != vap.Name {
			continue
		}
		if slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			p.Enforced, p.Why = true, ""
			break
		}
		p.Why = fmt.Sprintf("binding %s only has validationActions %v", b.Name, b.Spec.ValidationActions)
		p.Remedy = remedy.MergePatch("", "validatingadmissionpolicybinding", b.Name, map[string]any{"spec": map[string]any{"validationActions": []string{"Deny"}}})
	}
	return []protection{p}
}

// webhookProtection recognises externalip-webhook (and look-alikes): a validating webhook on
// Services whose name says externalip.
func webhookProtection(w admissionregistrationv1.ValidatingWebhookConfiguration) (protection, bool) {
	for _, h := range w.Webhooks {
		names := strings.ToLower(w.Name + " " + h.Name)
		if h.ClientConfig.Service != nil {
			names += " " + strings.ToLower(h.ClientConfig.Service.Name)
		}
		if !strings.Contains(names, "externalip") || !coversServices(h.Rules) {
			continue
		}
		p := protection{What: fmt.Sprintf("ValidatingWebhookConfiguration %s (%s)", w.Name, h.Name), Enforced: true}
		if h.FailurePolicy != nil && *h.FailurePolicy == admissionregistrationv1.Ignore {
			p.What += ", failurePolicy Ignore: bypassed while the webhook is down"
		}
		return p, true
	}
	return protection{}, false
}

func coversServices(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, "services") || slices.Contains(r.Resources, "*")) {
			return true
		}
	}
	return false
}

// kyvernoProtection: a Kyverno policy about externalIPs enforces only with Enforce (the
// default is Audit); a namespaced Policy protects only its namespace.
func kyvernoProtection(pol unstructured.Unstructured) (protection, bool) {
	spec, _ := pol.Object["spec"].(map[string]any)
	if !kube.MentionsExternalIPs(spec) {
		return protection{}, false
	}
	p := protection{What: fmt.Sprintf("Kyverno %s %s", pol.GetKind(), pol.GetName())}
	actions := []string{}
	if a, ok, _ := unstructured.NestedString(pol.Object, "spec", "validationFailureAction"); ok {
		actions = append(actions, a)
	}
	rules, _, _ := unstructured.NestedSlice(pol.Object, "spec", "rules")
	for _, r := range rules {
		if m, ok := r.(map[string]any); ok {
			if a, ok, _ := unstructured.NestedString(m, "validate", "failureAction"); ok {
				actions = append(actions, a)
			}
		}
	}
	for _, a := range actions {
		if strings.EqualFold(a, "enforce") {
			p.Enforced = true
		}
	}
	if !p.Enforced {
		p.Why = "validationFailureAction is Audit (Kyverno's default): violations are only reported"
		p.Remedy = remedy.MergePatch(pol.GetNamespace(), strings.ToLower(pol.GetKind())+".kyverno.io", pol.GetName(),
			map[string]any{"spec": map[string]any{"validationFailureAction": "Enforce"}}) + "   # newer Kyverno: each rule's validate.failureAction: Enforce"
	}
	if pol.GetNamespace() != "" {
		p.What += " in namespace " + pol.GetNamespace()
		if p.Enforced {
			p.Enforced, p.Why = false, "a namespaced Policy protects only namespace "+pol.GetNamespace()+"; a Service elsewhere can still claim the addresses"
			p.Remedy = "# make it a ClusterPolicy (kind: ClusterPolicy, no namespace) so that it covers every namespace"
		}
	}
	return p, true
}

// admissionPolicyYAML reserves spec.externalIPs for the two Services of the setup and their
// addresses, with a ValidatingAdmissionPolicy (built in since Kubernetes 1.30).
func admissionPolicyYAML(s *kube.Setup) string {
	var owners, addrs []string
	for _, svc := range []*corev1.Service{s.ProxyService, s.DNSService} {
		owners = append(owners, svc.Namespace+"/"+svc.Name)
		for _, ip := range svc.Spec.ExternalIPs {
			if !slices.Contains(addrs, ip) {
				addrs = append(addrs, ip)
			}
		}
	}
	const name = "restrict-service-externalips"
	expr := "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0 ||\n" +
		"((object.metadata.namespace + '/' + object.metadata.name) in " + celList(owners) + " &&\n" +
		"object.spec.externalIPs.all(ip, ip in " + celList(addrs) + "))"
	policy := admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: expr,
				Message:    "spec.externalIPs is reserved for " + strings.Join(owners, " and ") + " (CVE-2020-8554)",
			}},
		},
	}
	return remedy.Apply(remedy.YAML(policy, denyBinding(name)))
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

// kubeProxyFindings reads kubeadm's kube-proxy configuration: with the feature gate
// AllowServiceExternalIPs off, kube-proxy programs no rule for any externalIP.
func kubeProxyFindings(s *kube.Setup) []engine.Finding {
	if s.KubeProxyConfig == "" {
		return nil
	}
	const obj = "ConfigMap kube-system/kube-proxy"
	var cfg struct {
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if err := yaml.Unmarshal([]byte(s.KubeProxyConfig), &cfg); err != nil {
		return []engine.Finding{{Code: "LA106-KUBE-PROXY-CONFIG", Severity: engine.SeverityWarn, Object: obj,
			Message:     "config.conf does not parse, so kube-proxy's feature gates are unknown (and kube-proxy itself cannot load it on restart): " + err.Error(),
			Evidence:    map[string]any{"key": "config.conf", "error": err.Error()},
			Remediation: "kubectl -n kube-system edit configmap kube-proxy   # fix config.conf at the line named above"}}
	}
	if on, set := cfg.FeatureGates["AllowServiceExternalIPs"]; set && !on {
		return []engine.Finding{{Code: "LA106-KUBE-PROXY-GATE-OFF", Severity: engine.SeverityFail, Object: obj,
			Message:     "kube-proxy runs with the feature gate AllowServiceExternalIPs=false: it programs no rule for any externalIP, so nothing answers on the LAN addresses",
			Evidence:    map[string]any{"featureGates": cfg.FeatureGates},
			Remediation: "kubectl -n kube-system edit configmap kube-proxy   # featureGates: {AllowServiceExternalIPs: true}\nkubectl -n kube-system rollout restart daemonset kube-proxy"}}
	}
	return nil
}

// deprecationFinding explains the API's warning about spec.externalIPs (sent on writes, so
// doctor's reads rarely see it) and what the coming releases change.
func deprecationFinding(s *kube.Setup) engine.Finding {
	var seen []string
	for _, w := range s.APIWarnings {
		if strings.Contains(w, "externalIPs") {
			seen = append(seen, w)
		}
	}
	ev := map[string]any{
		"kep":           "https://kep.k8s.io/5707",
		"apiWarning":    "spec.externalIPs is deprecated and may no longer be implemented in some clusters",
		"timeline":      "deprecated in 1.36 (warning on create/update); planned: kube-proxy gate AllowServiceExternalIPs off by default in 1.40, implementation removed in 1.43",
		"serverVersion": s.ServerVersion,
	}
	if len(seen) > 0 {
		ev["apiWarningsSeen"] = seen
	}
	f := engine.Finding{Code: "LA106-DEPRECATED", Severity: engine.SeverityInfo, Object: "spec.externalIPs (" + kube.ServiceRef(s.ProxyService) + ", " + kube.ServiceRef(s.DNSService) + ")",
		Message: "spec.externalIPs is deprecated since Kubernetes 1.36: every create or update of these Services returns the warning \"spec.externalIPs is deprecated and may no longer be implemented in some clusters\". " +
			"It still works; kube-proxy's feature gate AllowServiceExternalIPs is planned to default to off in 1.40 and the implementation to go in 1.43, so plan the move (a LoadBalancer implementation such as MetalLB or kube-vip announcing the same addresses, or Gateway API)",
		Evidence: ev}
	if minor, ok := kubeMinor(s.ServerVersion); ok && minor >= 40 {
		f.Code, f.Severity = "LA106-GATE-DEFAULT-OFF", engine.SeverityWarn
		f.Message = fmt.Sprintf("this cluster runs Kubernetes 1.%d, where kube-proxy's AllowServiceExternalIPs is planned to be off by default: unless kube-proxy enables it, externalIPs are not programmed at all", minor)
		f.Remediation = "kubectl -n kube-system get configmap kube-proxy -o yaml | grep -A3 featureGates   # AllowServiceExternalIPs: true keeps them, until 1.43"
	}
	return f
}

var gitMinor = regexp.MustCompile(`^v?1\.(\d+)`)

func kubeMinor(v string) (int, bool) {
	m := gitMinor.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}
