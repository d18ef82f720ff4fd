package vpn

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
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
		fs = append(fs, scopeFindings(run, p, rb, raw, ev)...)
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

// ladderDest is an address the ladders send the pool's packets to, with what it is.
type ladderDest struct {
	addr netip.Addr
	desc string
}

// natScope judges a masquerade by the packets the ladders send, not by the rules' presence: a
// rule limited by `-o tun0`, or by a destination, translates only the packets it matches
// (pkg/linuxnet NATRule.Matches), and the pool's packets to the ladder's pod and VIP leave
// through the pod's uplink (the default route's interface) with the VIP still as their
// destination (the pod's own namespace has no kube-proxy rules; the node DNATs it after).
// missed are the ladder's destinations no rule translates; unknown those that depend on an
// out-interface when the uplink was not read. Both are empty without rules (no masquerade).
func natScope(run *facts.Run, p *facts.Pod) (missed, unknown []string) {
	if len(p.NAT.Rules) == 0 || run.TargetsErr != nil {
		return nil, nil
	}
	var dests []ladderDest
	if t := run.Targets; t.PodIP.IsValid() {
		dests = append(dests, ladderDest{t.PodIP, t.PodDesc})
	}
	if t := run.Targets; t.VIP.IsValid() {
		dests = append(dests, ladderDest{t.VIP, t.VIPDesc})
	}
	for _, d := range dests {
		matched, known := false, true
		for _, r := range p.NAT.Rules {
			m, k := r.Matches(d.addr, p.Tunnel.Uplink)
			matched = matched || m
			known = known && k
		}
		switch {
		case matched:
		case !known:
			unknown = append(unknown, fmt.Sprintf("%s (%s)", d.addr, d.desc))
		default:
			missed = append(missed, fmt.Sprintf("%s (%s)", d.addr, d.desc))
		}
	}
	return missed, unknown
}

// scopeFindings: the masquerade's verdict for the ladder's packets (natScope).
func scopeFindings(run *facts.Run, p *facts.Pod, rb returnRoute, raw []string, ev map[string]any) []engine.Finding {
	obj, n, uplink := p.Object(), p.NAT, p.Tunnel.Uplink
	missed, unknown := natScope(run, p)
	rules := strings.Join(raw, "; ")
	info := engine.Finding{Code: "VPN005-MASQUERADED", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
		Message: fmt.Sprintf("the pool %s is source-translated on its way out (%s)", n.Pool, rules)}
	switch {
	case len(missed) == 0 && len(unknown) == 0:
		return []engine.Finding{info}
	case rb.Back:
		info.Message += fmt.Sprintf("; packets to %s are not, and the cluster routes the pool back: %s", strings.Join(append(missed, unknown...), ", "), strings.Join(rb.How, "; "))
		return []engine.Finding{info}
	case len(missed) > 0:
		ev["untranslated"] = missed
		ev["uplink"] = uplink
		return []engine.Finding{{Code: "VPN005-MASQUERADE-SCOPE", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message:     fmt.Sprintf("the masquerade (%s) does not match the pool's packets to %s, which leave through %s: they reach pods with a %s source, and the replies have no route back to the pool", rules, strings.Join(missed, ", "), uplink, n.Pool),
			Remediation: masqueradeFix(p)}}
	default:
		ev["unknown"] = unknown
		return []engine.Finding{{Code: "VPN005-MASQUERADE-SCOPE-UNKNOWN", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("the masquerade (%s) is limited to an out-interface, and the pod's uplink (its default route's interface) was not read: whether packets to %s are translated is unknown", rules, strings.Join(unknown, ", "))}}
	}
}
