package vpn

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// VPNReturnPath is VPN005: replies to clients find their way back. The cluster network has no
// route to the client pool, so the pod must masquerade the pool's packets; and NetworkPolicies
// match the source a packet carries after that translation.
func VPNReturnPath(env *Env) engine.Check {
	return judged(env, "VPN005", facts.NeedNAT|facts.NeedClientLadder, judgeReturnPathRun)
}

func judgeReturnPathRun(run *facts.Run) engine.Outcome {
	return perPod(run, func(p *facts.Pod) ([]engine.Finding, error) {
		if p.NATErr != nil {
			return nil, p.NATErr
		}
		return returnPathFindings(run, p)
	})
}

func returnPathFindings(run *facts.Run, p *facts.Pod) ([]engine.Finding, error) {
	obj, n := p.Object(), p.NAT
	ev := map[string]any{"pool": n.Pool.String(), "readWith": n.Read}
	rb := routedBack(run, p)
	if len(rb.How) > 0 {
		ev["routeBack"] = rb.How
	}
	var fs []engine.Finding
	var err error
	switch {
	case len(n.Rules) > 0:
		raw := make([]string, 0, len(n.Rules))
		for _, rule := range n.Rules {
			raw = append(raw, rule.Raw)
		}
		ev["rules"] = raw
		fs = append(fs, engine.Finding{Code: "VPN005-MASQUERADED", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("the pool %s is source-translated on its way out (%s)", n.Pool, strings.Join(raw, "; "))})
	case rb.Back:
		fs = append(fs, engine.Finding{Code: "VPN005-ROUTED-BACK", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("the pool %s is not masqueraded, but the cluster routes the pool back: %s", n.Pool, strings.Join(rb.How, "; "))})
	case n.Unknown != "":
		err = fmt.Errorf("%s: %s", obj, n.Unknown)
		fs = append(fs, engine.Finding{Code: "VPN005-NAT-UNKNOWN", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Message: n.Unknown + "; whether the pool is masqueraded is unknown"})
	default:
		msg := fmt.Sprintf("no masquerade for the client pool %s: forwarded packets reach pods with a %s source, and their replies go to the cluster network, which has no route back to the pool", n.Pool, n.Pool)
		if rb.Known {
			msg += " (" + strings.Join(rb.How, "; ") + ")"
		} else {
			msg += " (whether the cluster routes the pool back, as a BGP-advertised pool is, could not be read: " + strings.Join(rb.Unknown, "; ") + ")"
		}
		fs = append(fs, engine.Finding{Code: "VPN005-NO-MASQUERADE", Severity: engine.SeverityFail, Object: obj, Evidence: ev, Message: msg, Remediation: masqueradeFix(p)})
	}
	fs = append(fs, policyFindings(run, p)...)
	return fs, err
}

// masqueradeFix masquerades the pool in the pod's uplink.
func masqueradeFix(p *facts.Pod) string {
	return masqueradeFixYAML(p.Owner, p.Image(), p.NAT.Pool, p.Tunnel.Uplink)
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
