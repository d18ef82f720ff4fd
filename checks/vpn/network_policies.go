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

// What the NetworkPolicies do to the VPN's traffic: ingress rules that stop matching the
// clients once the pool is masqueraded, and egress rules of the VPN pod that admit nothing to
// the ladder's pod. VPN005 reports them; VPN008 names them in its verdict.

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

// policyMismatch is a NetworkPolicy whose ingress rule is written for the wrong source: the
// pool when packets arrive masqueraded, or the VPN pod when they do not.
type policyMismatch struct {
	Policy  string
	Message string
	Fix     string
}

func policyMismatches(nps []networkingv1.NetworkPolicy, p *facts.Pod) []policyMismatch {
	if p.NAT.Unknown != "" {
		return nil
	}
	pool, masqueraded, podIP := p.NAT.Pool, p.NAT.Masqueraded(), p.Pod.Status.PodIP
	var out []policyMismatch
	for _, np := range nps {
		if !isolatesIngress(np) {
			continue // its ingress rules are never applied: nothing to mismatch
		}
		name := "NetworkPolicy " + np.Namespace + "/" + np.Name
		for i, rule := range np.Spec.Ingress {
			admitsPool, admitsPod := false, false
			for _, peer := range rule.From {
				admitsPool = admitsPool || (peer.IPBlock != nil && ipBlockAdmits(peer.IPBlock, pool))
				admitsPod = admitsPod || peerSelects(peer, np.Namespace, p.Pod, p.NamespaceLabels)
			}
			switch {
			case masqueraded && admitsPool && !admitsPod:
				out = append(out, policyMismatch{Policy: name,
					Message: fmt.Sprintf("%s ingress rule %d admits the client pool %s, but the pod masquerades it: packets arrive from the VPN pod's address %s, which this rule does not match", name, i, pool, podIP),
					Fix:     addPeerFix(np, i, selectorPeer(p.Pod))})
			case !masqueraded && admitsPod && !admitsPool:
				out = append(out, policyMismatch{Policy: name,
					Message: fmt.Sprintf("%s ingress rule %d admits the VPN pod, but without masquerade client packets keep their %s source, which this rule does not match", name, i, pool),
					Fix:     "# or masquerade the pool\n" + addPeerFix(np, i, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: pool.String()}})})
			}
		}
	}
	return out
}

// isolatesIngress reports whether np's ingress rules apply at all. policyTypes says which
// directions a policy isolates; ingress rules of a policy whose policyTypes leaves Ingress
// out are ignored (k8s.io/api networking/v1 types.go, NetworkPolicySpec.PolicyTypes; an empty
// list is defaulted to Ingress, plus Egress when there are egress rules:
// pkg/apis/networking/v1/defaults.go SetDefaults_NetworkPolicy). The real enforcer in the lab
// agrees: kube-network-policies evaluates a policy only for the types it lists
// (pkg/networkpolicy/networkpolicy.go, evaluator), and an egress-only policy with an ingress
// rule for the pool let the masqueraded packets through while VPN005 called it a mismatch
// (lab/e2e TestEnforcerAndVPN005ReadPoliciesAlike).
func isolatesIngress(np networkingv1.NetworkPolicy) bool {
	return len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// addPeerFix appends peer to the sources of the policy's ingress rule i (a JSON patch: the
// rule's list has no merge key, so a strategic merge would replace it).
func addPeerFix(np networkingv1.NetworkPolicy, i int, peer networkingv1.NetworkPolicyPeer) string {
	return remedy.JSONPatch(np.Namespace, "networkpolicy", np.Name,
		remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/ingress/%d/from/-", i), Value: peer})
}

func ipBlockAdmits(b *networkingv1.IPBlock, pool netip.Prefix) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Overlaps(pool) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Bits() <= pool.Bits() && ex.Contains(pool.Addr()) {
			return false
		}
	}
	return true
}

// peerSelects reports whether a policy peer selects pod (selectors, not ipBlock).
func peerSelects(peer networkingv1.NetworkPolicyPeer, policyNS string, pod *corev1.Pod, nsLabels map[string]string) bool {
	if peer.IPBlock != nil || (peer.PodSelector == nil && peer.NamespaceSelector == nil) {
		return false
	}
	if peer.NamespaceSelector == nil {
		if pod.Namespace != policyNS {
			return false
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil || !sel.Matches(labels.Set(nsLabels)) {
			return false
		}
	}
	if peer.PodSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

// selectorPeer selects the VPN pod by its namespace and its stable labels: per-revision
// labels would stop matching at the next rollout.
func selectorPeer(pod *corev1.Pod) networkingv1.NetworkPolicyPeer {
	match := map[string]string{}
	for k, v := range pod.Labels {
		if k == "pod-template-hash" || k == "controller-revision-hash" || k == "statefulset.kubernetes.io/pod-name" {
			continue
		}
		match[k] = v
	}
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: pod.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: match},
	}
}
