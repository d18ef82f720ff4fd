package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/admission"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// Admission control of spec.externalIPs (CVE-2020-8554) is judged by what each control does
// with the requests that matter, asked of the control itself (pkg/admission): a Service of a
// namespace with no special label claiming our addresses (refused: it protects; compared with
// the same Service without externalIPs, so that a refusal for another reason does not count),
// the next update of our own Services and of the other Services that use externalIPs today
// (refused: the next helm upgrade breaks), their re-creation, and an update of an existing
// Service that moves it onto our addresses.

// protectionObject is the Object of findings about admission control.
const protectionObject = "admission control (CVE-2020-8554)"

// foreignNamespace is the namespace of the hypothetical intercepting Service: one with no
// label but the one the API server sets on every namespace.
const foreignNamespace = "any-other-namespace"

// admissionControls gathers the cluster's controls about externalIPs.
func admissionControls(s *kube.Setup) []admission.Control {
	var out []admission.Control
	vaps := slices.DeleteFunc(slices.Clone(s.AdmissionPolicies), func(p admissionregistrationv1.ValidatingAdmissionPolicy) bool {
		spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.Spec)
		return err != nil || !kube.MentionsExternalIPs(spec)
	})
	out = append(out, admission.ValidatingAdmissionPolicies(vaps, s.AdmissionPolicyBindings)...)
	webhooksKnown := s.Unread(webhooksKey) == nil
	for _, cfg := range s.ValidatingWebhooks {
		for _, h := range cfg.Webhooks {
			if admission.IsExternalIPWebhook(cfg, h) {
				out = append(out, admission.ExternalIPWebhook(cfg, h))
			}
		}
	}
	out = append(out, admission.KyvernoPolicies(s.KyvernoPolicies, s.ValidatingWebhooks, webhooksKnown)...)
	out = append(out, admission.GatekeeperConstraints(s.GatekeeperTemplates, s.GatekeeperConstraints, s.ValidatingWebhooks, webhooksKnown)...)
	if on, known := s.APIServer.PluginOn("DenyServiceExternalIPs"); known && on {
		out = append(out, admission.DenyServiceExternalIPs(s.APIServer.Source()))
	}
	return out
}

// asked is one request LA106 asks about, with what it stands for.
type asked struct {
	what string
	req  admission.Request
}

// questions are the requests of the judgement.
type questions struct {
	foreign, foreignPlain asked
	own, ownCreate        []asked
	others                []asked // the next update of the other legitimate users of externalIPs
	moves                 []asked // an existing Service of another namespace moved onto our addresses
}

func namespaceOf(s *kube.Setup, name string) *corev1.Namespace {
	for i := range s.Namespaces {
		if s.Namespaces[i].Name == name {
			return &s.Namespaces[i]
		}
	}
	return nil
}

// ourAddresses are the externalIPs of our two Services, each once, in order.
func ourAddresses(s *kube.Setup) []string {
	var out []string
	for _, svc := range []*corev1.Service{s.ProxyService, s.DNSService} {
		for _, ip := range svc.Spec.ExternalIPs {
			if !slices.Contains(out, ip) {
				out = append(out, ip)
			}
		}
	}
	return out
}

func askQuestions(s *kube.Setup, u users) questions {
	addrs := ourAddresses(s)
	intruder := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: foreignNamespace, Name: "claim"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "claim"}, ExternalIPs: addrs,
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}}}}
	plain := intruder.DeepCopy()
	plain.Spec.ExternalIPs = nil
	q := questions{
		foreign:      asked{"a Service of another namespace claiming our addresses", admission.Request{Operation: admission.Create, Object: intruder}},
		foreignPlain: asked{"the same Service without externalIPs", admission.Request{Operation: admission.Create, Object: plain}},
	}
	unchanged := func(svc *corev1.Service) admission.Request {
		return admission.Request{Operation: admission.Update, Object: svc, OldObject: svc, Namespace: namespaceOf(s, svc.Namespace)}
	}
	for _, svc := range append([]*corev1.Service{s.ProxyService, s.DNSService}, u.companions...) {
		if len(svc.Spec.ExternalIPs) == 0 {
			continue
		}
		q.own = append(q.own, asked{"the next update of " + kubeobj.ServiceRef(svc), unchanged(svc)})
		q.ownCreate = append(q.ownCreate, asked{"re-creating " + kubeobj.ServiceRef(svc), admission.Request{Operation: admission.Create, Object: svc, Namespace: namespaceOf(s, svc.Namespace)}})
	}
	for _, svc := range u.others {
		q.others = append(q.others, asked{"the next update of " + kubeobj.ServiceRef(svc), unchanged(svc)})
	}
	for _, svc := range u.all() {
		if svc.Namespace == s.ProxyService.Namespace || svc.Namespace == s.DNSService.Namespace {
			continue
		}
		moved := svc.DeepCopy()
		moved.Spec.ExternalIPs = addrs
		q.moves = append(q.moves, asked{kubeobj.ServiceRef(svc) + " moved onto our addresses",
			admission.Request{Operation: admission.Update, Object: moved, OldObject: svc, Namespace: namespaceOf(s, svc.Namespace)}})
	}
	return q
}

// users are the other Services with externalIPs that LA106 does not flag (as interception or a
// node-port claim): the setup's companions (a Service selecting the proxy's or the DNS's pods
// on our addresses, the chart's traefik-udp), which the suggested policy allows with our own,
// and every other user (a VPN Service), which it leaves for the operator to allow: doctor
// cannot tell a legitimate user from an interception it does not see (a tenant's Service on a
// public resolver's address intercepts the cluster's own traffic to it, CVE-2020-8554).
type users struct {
	companions, others []*corev1.Service
}

func (u users) all() []*corev1.Service { return append(slices.Clone(u.companions), u.others...) }

func externalIPUsers(s *kube.Setup, judged []intercepted) users {
	flagged, companion := map[string]bool{}, map[string]bool{}
	for _, v := range judged {
		if len(v.clash)+len(v.nodePorts) > 0 {
			flagged[kubeobj.ServiceRef(v.svc)] = true
		} else if len(v.companion) > 0 {
			companion[kubeobj.ServiceRef(v.svc)] = true
		}
	}
	var out users
	for i := range s.Services {
		svc := &s.Services[i]
		ref := kubeobj.ServiceRef(svc)
		switch {
		case len(svc.Spec.ExternalIPs) == 0 || isSameService(svc, s.ProxyService) || isSameService(svc, s.DNSService) || flagged[ref]:
		case companion[ref]:
			out.companions = append(out.companions, svc)
		default:
			out.others = append(out.others, svc)
		}
	}
	return out
}

// controlJudgement is what one control does with the questions.
type controlJudgement struct {
	c        admission.Control
	protects bool
	unknown  string   // why its answer to the foreign claim cannot be told
	allows   string   // why it lets the foreign claim through
	refuses  []string // updates of our Services and their companions it refuses
	// refusesOther are the other users (q.others, by index) whose next update it refuses.
	refusesOther []int
	recreate     []string // our Services it would refuse to re-create
	movesLeft    []string // existing Services it still lets move onto our addresses
}

func judgeControl(c admission.Control, q questions) controlJudgement {
	j := controlJudgement{c: c}
	v, plain := c.Admit(q.foreign.req), c.Admit(q.foreignPlain.req)
	switch {
	case v.Decision == admission.Unknown:
		j.unknown = v.Why
	case v.Decision == admission.Denied && plain.Decision == admission.Allowed:
		j.protects = true
	case v.Decision == admission.Denied:
		j.unknown = fmt.Sprintf("it refuses the claim (%s) but also the same Service without externalIPs (%s), so the refusal is not about the addresses", v.Why, plain.Why)
	default:
		j.allows = v.Why
	}
	for _, a := range q.own {
		if r := c.Admit(a.req); r.Decision == admission.Denied {
			j.refuses = append(j.refuses, fmt.Sprintf("%s (%s)", a.what, r.Why))
		}
	}
	for i, a := range q.others {
		if r := c.Admit(a.req); r.Decision == admission.Denied {
			j.refusesOther = append(j.refusesOther, i)
		}
	}
	for _, a := range q.ownCreate {
		if r := c.Admit(a.req); r.Decision == admission.Denied {
			j.recreate = append(j.recreate, a.what)
		}
	}
	if j.protects {
		for _, a := range q.moves {
			if r := c.Admit(a.req); r.Decision == admission.Allowed {
				j.movesLeft = append(j.movesLeft, fmt.Sprintf("%s (%s)", a.what, r.Why))
			}
		}
	}
	return j
}

// protectionFindings judges the admission controls. unread lists the sources that could not
// be read, when no control was seen in the others.
func protectionFindings(s *kube.Setup, judged []intercepted) ([]engine.Finding, []string) {
	u := externalIPUsers(s, judged)
	q := askQuestions(s, u)
	js := judgeControls(admissionControls(s), q)
	suggestion := func() string { return suggestedPolicyRemedy(s, u) }
	protected := slices.ContainsFunc(js, func(j controlJudgement) bool { return j.protects })
	var protectors []engine.Finding
	out := make([]engine.Finding, 0, len(js)) // about one finding per control
	for _, j := range js {
		if j.protects {
			protectors = append(protectors, protectorFinding(j))
		}
		out = append(out, controlFindings(j, q, protected, suggestion)...)
	}
	others := otherUserFindings(u, js)
	if protected {
		return append(append(protectors, out...), others...), nil
	}
	if len(js) == 0 {
		found, unread := nothingRestricts(s, suggestion)
		return append(found, others...), unread
	}
	return append(out, others...), nil
}

// otherUserFindings lists each Service outside the setup that uses externalIPs: the suggested
// policy leaves it out (its allow line is commented out) because only the operator can tell
// whether it is legitimate. One on a public address is a WARN: it captures the cluster's own
// traffic to that address (a public resolver's, say), the interception of CVE-2020-8554.
func otherUserFindings(u users, js []controlJudgement) []engine.Finding {
	out := make([]engine.Finding, 0, len(u.others))
	for i, svc := range u.others {
		var public []string
		var claims []claim
		for _, ip := range svc.Spec.ExternalIPs {
			if f := readAddr(ip); f.Addr.IsValid() && isPublic(f.Addr) {
				public = append(public, ip)
				claims = append(claims, claim{Addr: f.Addr})
			}
		}
		var refusedBy []string
		for _, j := range js {
			if slices.Contains(j.refusesOther, i) {
				refusedBy = append(refusedBy, j.c.What)
			}
		}
		f := engine.Finding{Code: "LA106-OTHER-USER", Severity: engine.SeverityInfo, Object: kubeobj.ServiceRef(svc),
			Evidence: map[string]any{"externalIPs": svc.Spec.ExternalIPs},
			Message: fmt.Sprintf("uses externalIPs %s outside the setup: the suggested policy leaves its line commented out; uncomment it if this Service may keep these addresses",
				strings.Join(svc.Spec.ExternalIPs, ", "))}
		if len(refusedBy) > 0 {
			f.Message += fmt.Sprintf("; %s refuses its next update", strings.Join(refusedBy, " and "))
			f.Evidence["refusedBy"] = refusedBy
		}
		if len(public) > 0 {
			f.Code, f.Severity = "LA106-PUBLIC-CLAIM", engine.SeverityWarn
			f.Message = fmt.Sprintf("claims the public address %s: kube-proxy hands the cluster's own traffic to that address to this Service (interception, CVE-2020-8554); %s",
				strings.Join(public, ", "), f.Message)
			f.Remediation = withdrawClaims(svc, claims)
		}
		out = append(out, f)
	}
	return out
}

// isPublic: a global unicast address outside the private and shared ranges.
func isPublic(a netip.Addr) bool {
	shared := netip.MustParsePrefix("100.64.0.0/10") // RFC 6598
	return a.IsGlobalUnicast() && !a.IsPrivate() && !shared.Contains(a)
}

// judgeControls asks each enforcing control the questions; one that does not enforce answers
// nothing.
func judgeControls(cs []admission.Control, q questions) []controlJudgement {
	js := make([]controlJudgement, 0, len(cs))
	for _, c := range cs {
		if c.Enforcing {
			js = append(js, judgeControl(c, q))
		} else {
			js = append(js, controlJudgement{c: c})
		}
	}
	return js
}

// controlEvidence names the control and its notes.
func controlEvidence(c admission.Control) map[string]any {
	ev := map[string]any{"control": c.What}
	if len(c.Notes) > 0 {
		ev["notes"] = c.Notes
	}
	return ev
}

// protectorFinding says that j protects our addresses, and what else it would refuse.
func protectorFinding(j controlJudgement) engine.Finding {
	msg := j.c.What + " refuses a Service of another namespace claiming our addresses"
	if len(j.c.Notes) > 0 {
		msg += " (" + strings.Join(j.c.Notes, "; ") + ")"
	}
	if len(j.recreate) > 0 {
		msg += fmt.Sprintf("; it would also refuse %s (a helm uninstall and install, a restore from backup): allow them first then", strings.Join(j.recreate, " and "))
	}
	return engine.Finding{Code: "LA106-ADMISSION-ENFORCED", Severity: engine.SeverityInfo, Object: protectionObject, Message: msg, Evidence: controlEvidence(j.c)}
}

// controlFindings are the findings about one control besides its protecting: what a protector
// still lets through; when nothing protects, why this control does not (it does not enforce,
// its answer cannot be told, it lets the claim through); and, for any, the updates it refuses.
func controlFindings(j controlJudgement, q questions, protected bool, suggestion func() string) []engine.Finding {
	var out []engine.Finding
	ev := controlEvidence(j.c)
	switch {
	case j.protects:
		if len(j.movesLeft) > 0 {
			out = append(out, engine.Finding{Code: "LA106-EXISTING-CLAIMERS", Severity: engine.SeverityInfo, Object: protectionObject, Evidence: ev,
				Message: fmt.Sprintf("%s still lets Services that already use externalIPs change them: %s; whoever may edit them can still claim our addresses", j.c.What, strings.Join(j.movesLeft, "; "))})
		}
	case protected:
		// Another control protects: what this one does not do leaves the addresses protected.
	case !j.c.Enforcing:
		out = append(out, notEnforcedFinding(j.c, q, ev, suggestion))
	case j.unknown != "":
		out = append(out, engine.Finding{Code: "LA106-ADMISSION-UNKNOWN", Severity: engine.SeverityWarn, Object: protectionObject, Evidence: ev,
			Message:     fmt.Sprintf("what %s does with a Service of another namespace claiming our addresses cannot be told: %s", j.c.What, j.unknown),
			Remediation: "# if it does not reserve our addresses, this policy does:\n" + suggestion()})
	default:
		out = append(out, engine.Finding{Code: "LA106-ADMISSION-ALLOWS-CLAIMS", Severity: engine.SeverityWarn, Object: protectionObject, Evidence: ev,
			Message:     fmt.Sprintf("%s lets a Service of another namespace claim our addresses (%s): it does not protect them", j.c.What, j.allows),
			Remediation: suggestion()})
	}
	if len(j.refuses) > 0 {
		out = append(out, engine.Finding{Code: "LA106-ADMISSION-REFUSES-UPDATES", Severity: engine.SeverityWarn, Object: protectionObject, Evidence: map[string]any{"control": j.c.What, "refused": j.refuses},
			Message:     fmt.Sprintf("%s refuses %s: a helm upgrade or any change of these Services fails until it allows them", j.c.What, strings.Join(j.refuses, "; ")),
			Remediation: replaceRemedy(j.c, suggestion())})
	}
	return out
}

// notEnforcedFinding says that c is about externalIPs but does not enforce, with what enforcing
// it would do: when it would not protect, or would refuse our updates, the suggested policy is
// the fix instead of c's own remedy.
func notEnforcedFinding(c admission.Control, q questions, ev map[string]any, suggestion func() string) engine.Finding {
	f := engine.Finding{Code: "LA106-ADMISSION-NOT-ENFORCED", Severity: engine.SeverityWarn, Object: protectionObject, Evidence: ev,
		Message: fmt.Sprintf("%s is about externalIPs but does not enforce: %s", c.What, c.NotEnforcedWhy), Remediation: c.Remedy}
	enforced := c
	enforced.Enforcing = true
	ej := judgeControl(enforced, q)
	switch {
	case ej.protects && len(ej.refuses) == 0:
		return f
	case !ej.protects && ej.unknown != "":
		f.Message += "; even enforced, what it does with a Service of another namespace claiming our addresses cannot be told (" + ej.unknown + ")"
	case !ej.protects:
		f.Message += "; even enforced, it would let a Service of another namespace claim our addresses (" + ej.allows + ")"
	default:
		f.Message += "; enforced, it would refuse " + strings.Join(ej.refuses, "; ")
	}
	f.Remediation = suggestion()
	return f
}

// nothingRestricts is the finding when no control is about externalIPs, unless a source of
// controls could not be read (unread then says which: a control there is not seen).
func nothingRestricts(s *kube.Setup, suggestion func() string) ([]engine.Finding, []string) {
	var unread []string
	for _, key := range protectionReads() {
		if err := s.Unread(key); err != nil {
			unread = append(unread, fmt.Sprintf("could not read %s, so a control there is not seen: %v", key, err))
		}
	}
	if len(unread) > 0 {
		return nil, unread
	}
	return []engine.Finding{{Code: "LA106-ADMISSION", Severity: engine.SeverityWarn, Object: protectionObject,
		Message:     "nothing restricts spec.externalIPs (no ValidatingAdmissionPolicy, Kyverno or Gatekeeper policy, nor externalip-webhook is about it, and " + pluginText(s) + "): anyone who may edit a Service in any namespace can claim these addresses and intercept the LAN's traffic",
		Evidence:    protectionEvidence(s),
		Remediation: suggestion()}}, nil
}

// pluginText says what is known of DenyServiceExternalIPs.
func pluginText(s *kube.Setup) string {
	on, known := s.APIServer.PluginOn("DenyServiceExternalIPs")
	switch {
	case known && !on:
		return "the API server's flags (" + s.APIServer.Source() + ") do not enable the DenyServiceExternalIPs admission plugin"
	case len(s.APIServer.Disagree) > 0:
		return "the API server pods disagree on their admission plugins (" + strings.Join(s.APIServer.Disagree, ", ") + " differ from the first)"
	case s.APIServer.Why != "":
		return "the DenyServiceExternalIPs admission plugin cannot be seen: " + s.APIServer.Why
	}
	return "the DenyServiceExternalIPs admission plugin cannot be seen"
}

const webhooksKey = "validatingwebhookconfigurations.admissionregistration.k8s.io"

// protectionReads are the reads protection detection relies on.
func protectionReads() []string {
	const g = "admissionregistration.k8s.io"
	kyverno := kube.KyvernoPolicyResources()
	keys := make([]string, 0, 4+len(kyverno))
	keys = append(keys, kube.ReadKey(g, "validatingwebhookconfigurations", ""), kube.ReadKey(g, "validatingadmissionpolicies", ""), kube.ReadKey(g, "validatingadmissionpolicybindings", ""))
	for _, r := range kyverno {
		keys = append(keys, r.Key())
	}
	keys = append(keys, kube.GatekeeperTemplates().Key())
	return keys
}

// replaceRemedy takes c away and puts the suggested policy in its place.
func replaceRemedy(c admission.Control, suggestion string) string {
	if c.Remove == "" {
		return suggestion
	}
	return "# replace it with a policy that reserves each address for the Services that use it today:\n" + c.Remove + "\n" + suggestion
}

// protectionEvidence says what was looked at when nothing restricts externalIPs.
func protectionEvidence(s *kube.Setup) map[string]any {
	ev := map[string]any{"checked": []string{"ValidatingAdmissionPolicies", "ValidatingWebhookConfigurations", "Kyverno policies", "Gatekeeper constraints", "the API server's --enable-admission-plugins"}}
	if src := s.APIServer.Source(); src != "" {
		ev["apiServerFlags"] = src
	}
	return ev
}
