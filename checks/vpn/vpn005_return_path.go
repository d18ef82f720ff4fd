package vpn

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// VPNReturnPath is VPN005: replies to clients find their way back. The cluster network has no
// route to the client pool, so the pod must masquerade the pool's packets; and NetworkPolicies
// match the source a packet carries after that translation.
func VPNReturnPath(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN005", func(ctx context.Context) engine.Outcome { return t.returnPathOutcome(ctx) })
}

// natFact is what the pod's nat table does to the pool.
type natFact struct {
	Pool netip.Prefix
	// Read lists the iptables-save variants that answered.
	Read []string
	// Rules rewrite the pool's source (MASQUERADE, SNAT).
	Rules []linuxnet.NATRule
	// Unknown says why the nat table could not be read ("" when it was).
	Unknown string
	// Policies are NetworkPolicies that stop matching because of (or for lack of) masquerade.
	Policies  []policyMismatch
	PolicyErr error
}

func (n natFact) Masqueraded() bool { return n.Unknown == "" && len(n.Rules) > 0 }

const natScript = `for t in iptables-save iptables-legacy-save iptables-nft-save; do command -v "$t" >/dev/null 2>&1 || continue; echo "@@tool $t"; "$t" -t nat 2>&1; echo "@@rc $?"; done; echo "@@end"`

func (t *vpnTrace) podNAT(ctx context.Context, p *vpnPod) (natFact, error) {
	return p.nat.get(ctx, func(ctx context.Context) (natFact, error) {
		tun, err := t.podTunnel(ctx, p)
		if err != nil {
			return natFact{}, err
		}
		if !tun.Pool.IsValid() {
			return natFact{}, fmt.Errorf("%s: the client pool is unknown (see VPN004), so its masquerade cannot be looked for", p.object())
		}
		n := natFact{Pool: tun.Pool}
		out, _, err := t.exec(ctx, p, []string{"sh", "-c", natScript}, execTimeout)
		if err != nil {
			return natFact{}, fmt.Errorf("reading the nat table of %s: %w", p.object(), err)
		}
		n.Read, n.Rules, n.Unknown = readNATOutputs(out, tun.Pool)
		n.Policies, n.PolicyErr = t.policyMismatches(ctx, p, tun.Pool, n.Masqueraded())
		return n, nil
	})
}

// readNATOutputs reads each iptables-save variant's output (legacy and nft keep separate
// tables, so a rule may be in either) and returns the rules rewriting pool, deduplicated.
func readNATOutputs(out string, pool netip.Prefix) (read []string, rules []linuxnet.NATRule, unknown string) {
	if !strings.Contains(out, "@@end") {
		return nil, nil, "the nat table read was cut short"
	}
	var failures []string
	tool, body := "", strings.Builder{}
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "@@tool "):
			tool = strings.TrimPrefix(line, "@@tool ")
			body.Reset()
		case strings.HasPrefix(line, "@@rc "):
			text := body.String()
			if strings.TrimPrefix(line, "@@rc ") != "0" || !strings.Contains(text, "*nat") {
				failures = append(failures, tool+": "+firstLine(text))
				continue
			}
			read = append(read, tool)
			for _, r := range linuxnet.ParseIPTablesSave(text).SourceNATFor(pool) {
				if !seen[r.Raw] {
					seen[r.Raw] = true
					rules = append(rules, r)
				}
			}
		default:
			body.WriteString(line + "\n")
		}
	}
	switch {
	case len(read) > 0:
		return read, rules, ""
	case len(failures) > 0:
		return nil, nil, "iptables-save could not read the nat table (" + strings.Join(failures, "; ") + ")"
	}
	return nil, nil, "the image has no iptables-save, so the masquerade cannot be seen"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no output"
	}
	return s
}

// policyMismatch is a NetworkPolicy whose ingress rule is written for the wrong source: the
// pool when packets arrive masqueraded, or the VPN pod when they do not.
type policyMismatch struct {
	Policy  string
	Message string
	Fix     string
}

func (t *vpnTrace) policyMismatches(ctx context.Context, p *vpnPod, pool netip.Prefix, masqueraded bool) ([]policyMismatch, error) {
	nps, err := t.env.Client.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing NetworkPolicies: %w", err)
	}
	nsLabels := map[string]map[string]string{}
	nsOf := func(name string) map[string]string {
		if l, ok := nsLabels[name]; ok {
			return l
		}
		l := map[string]string{corev1.LabelMetadataName: name}
		if ns, err := t.env.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
			for k, v := range ns.Labels {
				l[k] = v
			}
		}
		nsLabels[name] = l
		return l
	}
	podIP := p.Pod.Status.PodIP
	var out []policyMismatch
	for _, np := range nps.Items {
		for i, rule := range np.Spec.Ingress {
			admitsPool, admitsPod := false, false
			for _, peer := range rule.From {
				if peer.IPBlock != nil && ipBlockAdmits(peer.IPBlock, pool) {
					admitsPool = true
				}
				if peerSelects(peer, np.Namespace, p.Pod, nsOf) {
					admitsPod = true
				}
			}
			name := "NetworkPolicy " + np.Namespace + "/" + np.Name
			switch {
			case masqueraded && admitsPool && !admitsPod:
				out = append(out, policyMismatch{Policy: name,
					Message: fmt.Sprintf("%s ingress rule %d admits the client pool %s, but the pod masquerades it: packets arrive from the VPN pod's address %s, which this rule does not match", name, i, pool, podIP),
					Fix:     fmt.Sprintf("# add this peer to spec.ingress[%d].from of %s\n%s", i, name, selectorPeerYAML(p.Pod))})
			case !masqueraded && admitsPod && !admitsPool:
				out = append(out, policyMismatch{Policy: name,
					Message: fmt.Sprintf("%s ingress rule %d admits the VPN pod, but without masquerade client packets keep their %s source, which this rule does not match", name, i, pool),
					Fix:     fmt.Sprintf("# add this peer to spec.ingress[%d].from of %s (or masquerade the pool)\n- ipBlock:\n    cidr: %s", i, name, pool)})
			}
		}
	}
	return out, nil
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
func peerSelects(peer networkingv1.NetworkPolicyPeer, policyNS string, pod *corev1.Pod, nsLabels func(string) map[string]string) bool {
	if peer.IPBlock != nil || (peer.PodSelector == nil && peer.NamespaceSelector == nil) {
		return false
	}
	if peer.NamespaceSelector == nil {
		if pod.Namespace != policyNS {
			return false
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil || !sel.Matches(labels.Set(nsLabels(pod.Namespace))) {
			return false
		}
	}
	if peer.PodSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

func selectorPeerYAML(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- namespaceSelector:\n    matchLabels:\n      %s: %s\n  podSelector:\n    matchLabels:\n", corev1.LabelMetadataName, pod.Namespace)
	for _, k := range sortedMapKeys(pod.Labels) {
		if k == "pod-template-hash" || k == "controller-revision-hash" || k == "statefulset.kubernetes.io/pod-name" {
			continue // per-revision labels would stop matching at the next rollout
		}
		fmt.Fprintf(&b, "      %s: %q\n", k, pod.Labels[k])
	}
	return strings.TrimRight(b.String(), "\n")
}

func (t *vpnTrace) returnPathOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	type res struct {
		n   natFact
		tun tunnelFact
		err error
	}
	rs := forEachPod(ctx, pods.Running, func(ctx context.Context, p *vpnPod) res {
		n, err := t.podNAT(ctx, p)
		tun, _ := t.podTunnel(ctx, p)
		return res{n, tun, err}
	})
	var routedBack *hopResult
	if cl, err := t.clientLadderFact(ctx); err == nil {
		routedBack = cl.hop(hopPodIP)
	}
	var fs []engine.Finding
	var errs []error
	for i, r := range rs {
		p := pods.Running[i]
		obj := p.object()
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		n := r.n
		ev := map[string]any{"pool": n.Pool.String(), "readWith": n.Read}
		switch {
		case n.Unknown != "":
			errs = append(errs, fmt.Errorf("%s: %s", obj, n.Unknown))
			fs = append(fs, engine.Finding{Code: "VPN005-NAT-UNKNOWN", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Message: n.Unknown + "; whether the pool is masqueraded is unknown"})
		case len(n.Rules) > 0:
			var raw []string
			for _, rule := range n.Rules {
				raw = append(raw, rule.Raw)
			}
			ev["rules"] = raw
			fs = append(fs, engine.Finding{Code: "VPN005-MASQUERADED", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
				Message: fmt.Sprintf("the pool %s is source-translated on its way out (%s)", n.Pool, strings.Join(raw, "; "))})
		case routedBack != nil && routedBack.State == hopAnswered:
			fs = append(fs, engine.Finding{Code: "VPN005-ROUTED-BACK", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
				Message: fmt.Sprintf("the pool %s is not masqueraded, but from this machine a pod answered through the tunnel: the cluster routes the pool back", n.Pool)})
		default:
			fs = append(fs, engine.Finding{Code: "VPN005-NO-MASQUERADE", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
				Message:     fmt.Sprintf("no masquerade for the client pool %s: forwarded packets reach pods with a %s source, and their replies go to the cluster network, which has no route back to the pool", n.Pool, n.Pool),
				Remediation: masqueradeFixYAML(t.podOwner(ctx, p), containerImage(p.Pod, p.Container), n.Pool, r.tun.Uplink)})
		}
		for _, m := range n.Policies {
			fs = append(fs, engine.Finding{Code: "VPN005-POLICY-MISMATCH", Severity: engine.SeverityWarn, Object: m.Policy, Message: m.Message, Remediation: m.Fix})
		}
		if n.PolicyErr != nil {
			fs = append(fs, engine.Finding{Code: "VPN005-POLICIES-UNREAD", Severity: engine.SeverityInfo, Object: obj, Message: "NetworkPolicies not checked: " + n.PolicyErr.Error()})
		}
	}
	if len(errs) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: errors.Join(errs...)}
	}
	return engine.Outcome{Findings: fs}
}
