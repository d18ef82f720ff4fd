package vpn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// VPNVerdict is VPN008: one sentence per replica naming the broken layer (forwarding off;
// the return path; DNS plumbing, not forwarding; policy or CNI) and the manifest change that
// fixes it. It judges every other fact (gathering those whose check was not selected), so it
// depends on VPN001 alone: a FAIL in VPN002 must not skip the verdict.
func VPNVerdict(env *Env) engine.Check {
	needs := facts.NeedForwarding | facts.NeedDurability | facts.NeedOrigin | facts.NeedTunnel | facts.NeedNAT | facts.NeedPodLadder | facts.NeedClientLadder
	return judged(env, "VPN008", needs, judgeVerdictRun)
}

// verdict is the conclusion for one pod.
type verdict struct {
	Severity engine.Severity
	Layer    string
	Sentence string
	Fix      string
	Evidence map[string]any
}

func judgeVerdictRun(run *facts.Run) engine.Outcome {
	var fs []engine.Finding
	var errs []error
	for _, p := range run.Pods {
		if p.ForwardingErr != nil {
			errs = append(errs, fmt.Errorf("%s: no verdict: %w", p.Object(), p.ForwardingErr))
			continue
		}
		v := podVerdict(run, p)
		v.Evidence["layer"] = v.Layer
		fs = append(fs, engine.Finding{Code: verdictCode(v.Layer), Severity: v.Severity, Object: p.Object(), Message: v.Sentence, Evidence: v.Evidence, Remediation: v.Fix})
	}
	if len(errs) > 0 {
		return engine.Outcome{Findings: fs, Err: errors.Join(errs...)}
	}
	return engine.Outcome{Findings: fs}
}

func podVerdict(run *facts.Run, p *facts.Pod) verdict {
	d := durabilityOf(p)
	ev := map[string]any{"ip_forward": p.Forwarding.Value}
	var clientFirst *facts.HopResult
	if run.ClientErr == nil && run.Client.Walked() {
		clientFirst = run.Client.Ladder.FirstFailed()
		ev["fromClient"] = run.Client.Ladder.Summary()
	}
	o := originOf(run, p)
	if o.NewPod != "" {
		ev["newPodStartsWith"] = o.NewPod
	}
	if v, ok := routesVerdict(run, p, d, o, ev); ok {
		return v
	}
	if p.Forwarding.Value == "0" {
		return forwardingOffVerdict(run, p, d, o, clientFirst, ev)
	}
	if clientFirst != nil {
		ev["firstSilentHop"] = clientFirst.String()
		return ladderVerdict(run, p, *clientFirst, true, ev)
	}
	if p.LadderErr == nil {
		ev["fromPod"] = p.Ladder.Summary()
		if first := p.Ladder.FirstFailedExcept(facts.PodSideHops...); first != nil {
			ev["firstSilentHop"] = first.String()
			return ladderVerdict(run, p, *first, false, ev)
		}
	}
	if noReturnPath(run, p) {
		return returnPathVerdict(run, p, ev, "")
	}
	if v, ok := policyVerdict(run, p, engine.SeverityWarn, ev); ok {
		return v
	}
	if v, ok := mtuVerdict(run, p, ev); ok {
		return v
	}
	if !d.inManifest() && o.NewPod != "1" {
		return durabilityVerdict(p, d, o, ev)
	}
	return worksVerdict(run, p, d, o, ev)
}

// routesVerdict: clients do not send the pod and Service addresses into the tunnel, so
// nothing behind the VPN pod can answer them, whatever its forwarding. This machine's routes
// tell when it walked the ladder; otherwise a server that pushes no route does.
func routesVerdict(run *facts.Run, p *facts.Pod, d durability, o origin, ev map[string]any) (verdict, bool) {
	cfg, targets := p.Tunnel.Config, routeTargets(run.Targets)
	missing := unpushed(cfg, targets)
	var s string
	switch {
	case run.ClientErr == nil && run.Client.Walked():
		outside := notThroughTunnel(run.Client.Routes, targets)
		if len(outside) == 0 {
			return verdict{}, false
		}
		ev["routes"] = outside
		why := "the server pushes no route to them"
		switch {
		case !serverMode(cfg):
			why = "a point-to-point tunnel pushes nothing: the client's own configuration must route them"
			missing = targets
		case len(missing) == 0:
			why = fmt.Sprintf("the server pushes %v, which this machine's client did not install (route-nopull, or a more specific route wins)", cfg.PushRoutes)
		}
		s = fmt.Sprintf("The client's routes, not forwarding: %s; %s.", strings.Join(outside, "; "), why)
	case serverMode(cfg) && len(missing) > 0 && run.TargetsErr == nil:
		ev["routes"] = fmt.Sprintf("pushed: %v", cfg.PushRoutes)
		s = fmt.Sprintf("The client's routes, not forwarding: the server pushes no route to %s, so clients send those packets by their own default route and never into the tunnel, unless each client's own configuration routes them (--from-client reads this machine's).", targetList(missing))
	default:
		return verdict{}, false
	}
	fix := pushRoutesFix(run.Targets, missing)
	if !serverMode(cfg) {
		fix = clientRoutesFix(run.Targets, missing)
	}
	if p.Forwarding.Value == "0" {
		s = strings.TrimSuffix(s, ".") + "; forwarding is off in the pod too (net.ipv4.ip_forward=0): fix both."
		fix += "\n" + withCNIFix(run, p, o, forwardingFix(d))
	}
	return verdict{Severity: engine.SeverityFail, Layer: "routes", Evidence: ev, Sentence: s, Fix: fix}, true
}

// mtuVerdict: every hop answered, but a hop's Don't-Fragment sweep found a black hole (this
// machine's ladder first: it crosses the tunnel).
func mtuVerdict(run *facts.Run, p *facts.Pod, ev map[string]any) (verdict, bool) {
	ladders := []struct {
		where string
		l     facts.Ladder
	}{{"from this machine through the tunnel", run.Client.Ladder}, {"from inside " + p.Object(), p.Ladder}}
	for _, lad := range ladders {
		for _, h := range lad.l {
			if h.MTU == nil || !h.MTU.BlackHole() {
				continue
			}
			ev["mtu"] = mtuSizes(*h.MTU)
			largest := h.MTU.Largest()
			return verdict{Severity: engine.SeverityFail, Layer: "MTU", Evidence: ev,
				Sentence: fmt.Sprintf("A tunnel MTU black hole: %s, %s %s answers small packets, but Don't-Fragment packets of %d bytes vanish without an ICMP error (the largest that passes is %d): full-size TCP segments and large answers die on the way while pings work.", lad.where, h.Hop, h.Target, h.MTU.FirstSilent(), largest),
				Fix: "# in the OpenVPN server configuration and every client's (both ends must agree), then reconnect:\n" +
					openVPNDirective("tun-mtu", strconv.Itoa(largest)) + "\n" +
					"# this cannot be proven from here: run vpn-trace --from-client again and every size should pass"}, true
		}
	}
	return verdict{}, false
}

// durabilityVerdict: forwarding works by hand, or for reasons that could not be read.
func durabilityVerdict(p *facts.Pod, d durability, o origin, ev map[string]any) verdict {
	s := fmt.Sprintf("Forwarding works in %s now, but only by hand: nothing in %s's manifest sets net.ipv4.ip_forward and a new pod starts with 0 (%s); %s; %s.", p.Object(), d.Owner, o.sentence(), handFixLifetime, d.VariantWhy)
	if o.NewPod == "" {
		s = fmt.Sprintf("Forwarding works in %s now, but nothing in %s's manifest sets net.ipv4.ip_forward, and whether a new pod gets 1 from its node or CNI could not be told (%s): unless they give it, it is a hand fix that the next pod loses; %s.", p.Object(), d.Owner, strings.Join(o.Unknown, "; "), d.VariantWhy)
	}
	return verdict{Severity: engine.SeverityWarn, Layer: "durability", Evidence: ev, Sentence: s, Fix: forwardingFix(d)}
}

func forwardingOffVerdict(run *facts.Run, p *facts.Pod, d durability, o origin, clientFirst *facts.HopResult, ev map[string]any) verdict {
	s := fmt.Sprintf("Forwarding is off in %s (net.ipv4.ip_forward=0): the tunnel delivers client packets into the pod and the kernel drops them instead of routing them on, so only the tunnel peer answers", p.Object())
	if clientFirst != nil && clientFirst.Hop == facts.HopPodIP {
		s += fmt.Sprintf(" (from this machine: the server answered, %s was silent)", clientFirst.Target)
	}
	if o.NewPod == "0" {
		s += "; every new pod starts so: " + o.sentence()
	}
	return verdict{Severity: engine.SeverityFail, Layer: "forwarding off", Evidence: ev,
		Sentence: s + "; make it part of the manifest: " + d.VariantWhy + ".",
		Fix:      withCNIFix(run, p, o, forwardingFix(d))}
}

func worksVerdict(run *facts.Run, p *facts.Pod, d durability, o origin, ev map[string]any) verdict {
	s := "No broken layer found: forwarding is on and set by the manifest"
	if !d.inManifest() {
		s = "No broken layer found: forwarding is on, given to every new pod by its node or CNI (" + o.sentence() + ")"
	}
	if missed, unknown := natScope(run, p); p.NAT.Masqueraded() && len(missed)+len(unknown) == 0 {
		s += ", the client pool is masqueraded"
	}
	switch {
	case run.ClientErr == nil && run.Client.Walked():
		s += ", and every hop answered from this machine through the tunnel."
	case p.LadderErr == nil:
		s += ", and every hop answered from inside the pod; run with --from-client on a connected machine to test the path through the tunnel."
	default:
		s += "."
	}
	return verdict{Severity: engine.SeverityInfo, Layer: "none", Sentence: s, Evidence: ev}
}

// ladderVerdict names the layer of the first failed hop.
func ladderVerdict(run *facts.Run, p *facts.Pod, h facts.HopResult, fromClient bool, ev map[string]any) verdict {
	where := "from inside " + p.Object()
	if fromClient {
		where = "from this machine through the tunnel"
	}
	switch h.Hop {
	case facts.HopPeer:
		return verdict{Severity: engine.SeverityFail, Layer: "tunnel", Evidence: ev,
			Sentence: fmt.Sprintf("The tunnel itself: %s the server's tunnel address %s does not answer, so nothing beyond it can; check that the client is connected and the server is up (the pod's forwarding is on).", where, h.Target),
			Fix:      serverLogs(p)}
	case facts.HopPodIP:
		if fromClient {
			return clientPodHopVerdict(run, p, h, where, ev)
		}
		if f, ok := egressDenied(run, p); ok {
			return verdict{Severity: engine.SeverityFail, Layer: "policy", Evidence: ev, Sentence: "Policy, not forwarding: " + f.Message + ".", Fix: f.Remediation}
		}
		return verdict{Severity: engine.SeverityFail, Layer: "policy or CNI", Evidence: ev,
			Sentence: fmt.Sprintf("Policy or CNI, not forwarding: even %s, %s does not answer, so the VPN pod's own traffic to pods is dropped (a NetworkPolicy egress rule on the VPN pod or an ingress rule on the target, or the CNI)%s.", where, h.Target, cniPoliciesSaid(run, p)),
			Fix:      remedy.Kubectl("", "get", "networkpolicy", "-A") + "   # egress rules selecting " + p.Ref.String() + ", ingress rules selecting the target"}
	case facts.HopVIP:
		return verdict{Severity: engine.SeverityFail, Layer: "policy or CNI", Evidence: ev,
			Sentence: fmt.Sprintf("The Service layer or policy: %s a pod answers but the cluster DNS VIP %s does not (%s): kube-proxy's rules for the Service, its endpoints, or a policy on the DNS pods.", where, h.Target, h.Detail),
			Fix:      remedy.Kubectl("kube-system", "get", "endpointslices", "-l", "kubernetes.io/service-name=kube-dns")}
	case facts.HopNames: // only from the client: in-pod resolver failures are not the clients' path
		return dnsPlumbingVerdict(run, p.Tunnel, h, ev)
	case facts.HopPublic:
		return verdict{Severity: engine.SeverityWarn, Layer: "egress", Evidence: ev,
			Sentence: fmt.Sprintf("Egress: %s everything inside the cluster answers but %s does not: the nodes' outbound NAT or an egress policy, not the VPN.", where, h.Target)}
	}
	return verdict{Severity: engine.SeverityWarn, Layer: h.Hop, Evidence: ev, Sentence: h.String()}
}

// clientPodHopVerdict: the server answers through the tunnel, a pod does not, and the pod's
// forwarding is on: the return path, a policy, or the CNI.
func clientPodHopVerdict(run *facts.Run, p *facts.Pod, h facts.HopResult, where string, ev map[string]any) verdict {
	if noReturnPath(run, p) {
		return returnPathVerdict(run, p, ev, fmt.Sprintf(" (from this machine: the server answered, %s was silent)", h.Target))
	}
	if v, ok := policyVerdict(run, p, engine.SeverityFail, ev); ok {
		return v
	}
	return verdict{Severity: engine.SeverityFail, Layer: "policy or CNI", Evidence: ev,
		Sentence: fmt.Sprintf("Policy or CNI: forwarding is on and the pool is masqueraded or routed back, yet %s %s does not answer: a NetworkPolicy selecting it, or the CNI, drops the VPN pod's forwarded packets%s.", where, h.Target, cniPoliciesSaid(run, p)),
		Fix:      remedy.Kubectl("", "get", "networkpolicy", "-A") + "   # look for policies selecting the target pod, and admit the VPN pod " + p.Ref.String()}
}

// noReturnPath: the nat table was read, the pool is not masqueraded, and the cluster is not
// seen routing it back.
func noReturnPath(run *facts.Run, p *facts.Pod) bool {
	if p.NATErr != nil || p.NAT.Unknown != "" || routedBack(run, p).Back {
		return false
	}
	missed, _ := natScope(run, p)
	return !p.NAT.Masqueraded() || len(missed) > 0
}

// policyVerdict: a NetworkPolicy written for the wrong source, or one that isolates the VPN
// pod's egress without admitting the pods.
func policyVerdict(run *facts.Run, p *facts.Pod, sev engine.Severity, ev map[string]any) (verdict, bool) {
	if p.NATErr != nil {
		return verdict{}, false
	}
	if ms := policyMismatches(run.Policies, p); len(ms) > 0 {
		return verdict{Severity: sev, Layer: "policy", Evidence: ev, Sentence: "Policy: " + ms[0].Message + ".", Fix: ms[0].Fix}, true
	}
	if f, ok := egressDenied(run, p); ok {
		return verdict{Severity: sev, Layer: "policy", Evidence: ev, Sentence: "Policy: " + f.Message + ".", Fix: f.Remediation}, true
	}
	return verdict{}, false
}

// cniPoliciesSaid names the CNI's policies that select the pods, for a policy-or-CNI verdict.
func cniPoliciesSaid(run *facts.Run, p *facts.Pod) string {
	fs := cniPolicyFindings(run, p)
	if len(fs) == 0 {
		return ""
	}
	return "; " + fs[0].Message
}

func returnPathVerdict(run *facts.Run, p *facts.Pod, ev map[string]any, seen string) verdict {
	why := "is not masqueraded"
	if missed, _ := natScope(run, p); len(missed) > 0 {
		why = "is masqueraded, but not for the packets the ladder sends to " + strings.Join(missed, ", ")
	}
	return verdict{Severity: engine.SeverityFail, Layer: "return path", Evidence: ev,
		Sentence: fmt.Sprintf("The return path: forwarding is on in %s, but the client pool %s %s, so replies go to addresses the cluster network does not route back%s; masquerade the pool in the pod.", p.Object(), p.NAT.Pool, why, seen),
		Fix:      masqueradeFix(p)}
}

// dnsPlumbingVerdict: through the tunnel the VIP answers a DNS question sent to its address,
// names do not resolve through this machine's resolver: it is not pointed at the cluster DNS.
func dnsPlumbingVerdict(run *facts.Run, tun facts.Tunnel, h facts.HopResult, ev map[string]any) verdict {
	vip := "CLUSTER_DNS_IP"
	if run.TargetsErr == nil && run.Targets.VIP.IsValid() {
		vip = run.Targets.VIP.String()
	}
	domain := strings.TrimPrefix(h.Target, "kubernetes.default.")
	fix := "# in the OpenVPN server configuration, then restart the server and reconnect:\n" +
		openVPNPush("dhcp-option", "DNS", vip) + "\n" +
		openVPNPush("dhcp-option", "DOMAIN", domain)
	why := "the server does not push the cluster DNS"
	if len(tun.Config.PushDNS) > 0 {
		why = fmt.Sprintf("the server pushes DNS %v, and this machine does not use it (its OpenVPN client does not apply pushed DNS options)", tun.Config.PushDNS)
	}
	return verdict{Severity: engine.SeverityFail, Layer: "DNS plumbing", Evidence: ev, Fix: fix,
		Sentence: fmt.Sprintf("DNS plumbing, not forwarding: through the tunnel the cluster DNS VIP %s answers a question sent to its address, but %s does not resolve through this machine's resolver (%s): %s.", vip, h.Target, h.Detail, why)}
}

// verdictCode is the finding code of a verdict's layer.
func verdictCode(layer string) string {
	switch layer {
	case "forwarding off":
		return "VPN008-FORWARDING-OFF"
	case "tunnel":
		return "VPN008-TUNNEL"
	case "routes":
		return "VPN008-ROUTES"
	case "MTU":
		return "VPN008-MTU"
	case "return path":
		return "VPN008-RETURN-PATH"
	case "DNS plumbing":
		return "VPN008-DNS-PLUMBING"
	case "policy":
		return "VPN008-POLICY"
	case "policy or CNI":
		return "VPN008-POLICY-OR-CNI"
	case "egress":
		return "VPN008-EGRESS"
	case "durability":
		return "VPN008-DURABILITY"
	case "none":
		return "VPN008-WORKS"
	}
	return "VPN008-SILENT-HOP"
}
