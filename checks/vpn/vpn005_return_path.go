package vpn

import (
	"fmt"
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
