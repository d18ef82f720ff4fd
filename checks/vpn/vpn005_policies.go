package vpn

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Policies drop the clients' packets in two places: on the way out of the VPN pod (egress
// rules of the policies that select it: forwarded packets leave through its interface) and on
// the way into the pod they reach (ingress rules, which match the source the packets carry:
// the VPN pod's address once masqueraded, the client's otherwise). The CNIs' own policies
// (Calico's, Cilium's) drop them as well; they are listed, and those selecting either pod
// named, but not evaluated.

// policyFindings are VPN005's policy findings for one VPN pod.
func policyFindings(run *facts.Run, p *facts.Pod) []engine.Finding {
	var fs []engine.Finding
	for _, m := range policyMismatches(run.Policies, p) {
		fs = append(fs, engine.Finding{Code: "VPN005-POLICY-MISMATCH", Severity: engine.SeverityWarn, Object: m.Policy, Message: m.Message, Remediation: m.Fix})
	}
	if f, ok := egressDenied(run, p); ok {
		fs = append(fs, f)
	}
	fs = append(fs, cniPolicyFindings(run, p)...)
	if unread := unreadPolicyKinds(run); len(unread) > 0 {
		fs = append(fs, engine.Finding{Code: "VPN005-POLICIES-UNREAD", Severity: engine.SeverityInfo, Object: p.Object(),
			Message: "policies not checked: " + strings.Join(unread, "; ")})
	}
	return fs
}

// unreadPolicyKinds are the policy kinds that could not be read, and why.
func unreadPolicyKinds(run *facts.Run) []string {
	var out []string
	if run.PoliciesErr != nil {
		out = append(out, "NetworkPolicies: "+run.PoliciesErr.Error())
	}
	for _, k := range run.CNIPolicies {
		if k.Err != nil {
			out = append(out, k.Kind+": "+k.Err.Error())
		}
	}
	return out
}

// destination is where the ladder's pod hop goes: the address, the port and protocol, and
// the pod (nil when only its address is known).
type destination struct {
	IP       netip.Addr
	Port     int32
	Protocol corev1.Protocol // "" for ICMP (no port)
	Pod      *corev1.Pod
	NSLabels map[string]string
	Desc     string
}

func ladderDestination(lt facts.Targets) (destination, bool) {
	if !lt.PodIP.IsValid() {
		return destination{}, false
	}
	d := destination{IP: lt.PodIP, Port: int32(lt.PodPort), Protocol: corev1.ProtocolTCP, Pod: lt.Pod, NSLabels: lt.PodNamespaceLabels, Desc: lt.PodDesc}
	switch {
	case lt.PodIsDNS:
		d.Protocol = corev1.ProtocolUDP
	case lt.PodPort == 0:
		d.Protocol = ""
	}
	return d, true
}

func (d destination) String() string {
	s := d.IP.String()
	if d.Protocol != "" {
		s = fmt.Sprintf("%s:%d/%s", d.IP, d.Port, d.Protocol)
	}
	return s + " (" + d.Desc + ")"
}

// egressDenied: the NetworkPolicies that select the VPN pod for egress admit nothing to the
// ladder's pod. unknown rules (a selector peer for a pod that was not read) count as admitting.
func egressDenied(run *facts.Run, p *facts.Pod) (engine.Finding, bool) {
	dest, ok := ladderDestination(run.Targets)
	if !ok {
		return engine.Finding{}, false
	}
	var isolating []networkingv1.NetworkPolicy
	for _, np := range run.Policies {
		if !selectsForEgress(np, p.Pod) {
			continue
		}
		isolating = append(isolating, np)
		for _, rule := range np.Spec.Egress {
			if egressAdmits(rule, np.Namespace, dest) {
				return engine.Finding{}, false
			}
		}
	}
	if len(isolating) == 0 {
		return engine.Finding{}, false
	}
	var names []string
	for _, np := range isolating {
		names = append(names, "NetworkPolicy "+np.Namespace+"/"+np.Name)
	}
	return engine.Finding{Code: "VPN005-EGRESS-DENIED", Severity: engine.SeverityWarn, Object: names[0],
		Message: fmt.Sprintf("%s select the VPN pod for egress and admit nothing to %s: the clients' packets the pod forwards leave through its interface, under these rules, and are dropped", strings.Join(names, ", "), dest),
		Remediation: "# admit the cluster's pods (narrow the peer to what the VPN clients need)\n" +
			addEgressRuleFix(isolating[0], networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}})}, true
}

// selectsForEgress reports whether np isolates pod's egress.
func selectsForEgress(np networkingv1.NetworkPolicy, pod *corev1.Pod) bool {
	if np.Namespace != pod.Namespace {
		return false
	}
	egress := len(np.Spec.Egress) > 0 && len(np.Spec.PolicyTypes) == 0
	for _, t := range np.Spec.PolicyTypes {
		egress = egress || t == networkingv1.PolicyTypeEgress
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	return egress && err == nil && sel.Matches(labels.Set(pod.Labels))
}

// egressAdmits reports whether an egress rule admits dest (or might: see egressDenied).
func egressAdmits(rule networkingv1.NetworkPolicyEgressRule, policyNS string, dest destination) bool {
	if !portsAdmit(rule.Ports, dest) {
		return false
	}
	if len(rule.To) == 0 {
		return true
	}
	for _, peer := range rule.To {
		switch {
		case peer.IPBlock != nil:
			if ipBlockHolds(peer.IPBlock, dest.IP) {
				return true
			}
		case dest.Pod == nil:
			return true // a selector the pod that was not read might match
		case peerSelects(peer, policyNS, dest.Pod, dest.NSLabels):
			return true
		}
	}
	return false
}

// portsAdmit applies a rule's port list to dest (a named port is the pod's container port).
func portsAdmit(ports []networkingv1.NetworkPolicyPort, dest destination) bool {
	if len(ports) == 0 {
		return true
	}
	if dest.Protocol == "" {
		return false // ICMP: a rule that lists ports admits TCP, UDP and SCTP only
	}
	for _, pp := range ports {
		proto := corev1.ProtocolTCP
		if pp.Protocol != nil {
			proto = *pp.Protocol
		}
		if proto != dest.Protocol {
			continue
		}
		switch {
		case pp.Port == nil:
			return true
		case pp.Port.Type == intstr.Int:
			end := pp.Port.IntVal
			if pp.EndPort != nil {
				end = *pp.EndPort
			}
			if dest.Port >= pp.Port.IntVal && dest.Port <= end {
				return true
			}
		case dest.Pod == nil:
			return true // a named port of a pod that was not read might be it
		case namedPort(dest.Pod, pp.Port.StrVal, proto) == dest.Port:
			return true
		}
	}
	return false
}

func namedPort(pod *corev1.Pod, name string, proto corev1.Protocol) int32 {
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			p := cp.Protocol
			if p == "" {
				p = corev1.ProtocolTCP
			}
			if cp.Name == name && p == proto {
				return cp.ContainerPort
			}
		}
	}
	return -1
}

func ipBlockHolds(b *networkingv1.IPBlock, ip netip.Addr) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(ip) {
		return false
	}
	return !slices.ContainsFunc(b.Except, func(e string) bool {
		ex, err := netip.ParsePrefix(e)
		return err == nil && ex.Contains(ip)
	})
}

// addEgressRuleFix appends rule to the policy's egress rules (a JSON patch: adding to a list
// that does not exist yet needs the list itself).
func addEgressRuleFix(np networkingv1.NetworkPolicy, rule networkingv1.NetworkPolicyEgressRule) string {
	op := remedy.PatchOp{Op: "add", Path: "/spec/egress/-", Value: rule}
	if len(np.Spec.Egress) == 0 {
		op = remedy.PatchOp{Op: "add", Path: "/spec/egress", Value: []networkingv1.NetworkPolicyEgressRule{rule}}
	}
	return remedy.JSONPatch(np.Namespace, "networkpolicy", np.Name, op)
}
