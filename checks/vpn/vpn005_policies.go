package vpn

import (
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
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
