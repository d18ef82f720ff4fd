package vpn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// VPNVerdict is VPN008: one sentence per replica naming the broken layer (forwarding off;
// the return path; DNS plumbing, not forwarding; policy or CNI) and the manifest change that
// fixes it. It reads every other fact (computing those whose check was not selected), so it
// depends on VPN001 alone: a FAIL in VPN002 must not skip the verdict.
func VPNVerdict(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN008", func(ctx context.Context) engine.Outcome { return t.verdictOutcome(ctx) })
}

// verdict is the conclusion for one pod.
type verdict struct {
	Severity engine.Severity
	Layer    string
	Sentence string
	Fix      string
	Evidence map[string]any
}

func (t *vpnTrace) verdictOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	cl, clErr := t.clientLadderFact(ctx)
	type res struct {
		v   verdict
		err error
	}
	rs := forEachPod(ctx, pods.Running, func(ctx context.Context, p *vpnPod) res {
		v, err := t.podVerdict(ctx, p, cl, clErr)
		return res{v, err}
	})
	var fs []engine.Finding
	var errs []error
	for i, r := range rs {
		p := pods.Running[i]
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: no verdict: %w", p.object(), r.err))
			continue
		}
		ev := r.v.Evidence
		if ev == nil {
			ev = map[string]any{}
		}
		ev["layer"] = r.v.Layer
		fs = append(fs, engine.Finding{Code: verdictCode(r.v.Layer), Severity: r.v.Severity, Object: p.object(), Message: r.v.Sentence, Evidence: ev, Remediation: r.v.Fix})
	}
	if len(errs) > 0 {
		return engine.Outcome{Findings: fs, Err: errors.Join(errs...)}
	}
	return engine.Outcome{Findings: fs}
}

func (t *vpnTrace) podVerdict(ctx context.Context, p *vpnPod, cl clientLadder, clErr error) (verdict, error) {
	fwd, err := t.podForwarding(ctx, p)
	if err != nil {
		return verdict{}, err
	}
	d, _ := t.podDurability(ctx, p)
	ev := map[string]any{"ip_forward": fwd.Value}
	var clientFirst *hopResult
	if clErr == nil && cl.Skip == "" {
		clientFirst = cl.Ladder.firstFailed()
		ev["fromClient"] = ladderSummary(cl.Ladder)
	}
	if fwd.Value == "0" {
		s := fmt.Sprintf("Forwarding is off in %s (net.ipv4.ip_forward=0): the tunnel delivers client packets into the pod and the kernel drops them instead of routing them on, so only the tunnel peer answers", p.object())
		if clientFirst != nil && clientFirst.Hop == hopPodIP {
			s += fmt.Sprintf(" (from this machine: the server answered, %s was silent)", clientFirst.Target)
		}
		return verdict{Severity: engine.SeverityFail, Layer: "forwarding off", Evidence: ev,
			Sentence: s + "; make it part of the manifest: " + d.VariantWhy + ".",
			Fix:      forwardingFix(d)}, nil
	}
	tun, _ := t.podTunnel(ctx, p)
	nat, natErr := t.podNAT(ctx, p)
	if clientFirst != nil {
		ev["firstSilentHop"] = clientFirst.String()
		return t.ladderVerdict(ctx, p, *clientFirst, true, tun, nat, natErr, ev), nil
	}
	pl, err := t.podLadder(ctx, p)
	if err == nil {
		ev["fromPod"] = ladderSummary(pl)
		first := pl.firstFailedExcept(podSideHops...)
		if first != nil {
			ev["firstSilentHop"] = first.String()
			return t.ladderVerdict(ctx, p, *first, false, tun, nat, natErr, ev), nil
		}
	}
	if natErr == nil && !nat.Masqueraded() && nat.Unknown == "" {
		return t.returnPathVerdict(ctx, p, tun, nat, ev, ""), nil
	}
	if natErr == nil && len(nat.Policies) > 0 {
		m := nat.Policies[0]
		return verdict{Severity: engine.SeverityWarn, Layer: "policy", Evidence: ev,
			Sentence: "Policy: " + m.Message + ".", Fix: m.Fix}, nil
	}
	if len(d.Explained) == 0 && d.ChartSwitch == "" {
		return verdict{Severity: engine.SeverityWarn, Layer: "durability", Evidence: ev,
			Sentence: fmt.Sprintf("Forwarding works in %s now, but only by hand: nothing in %s's manifest sets net.ipv4.ip_forward, so the next restart or replica drops back to 0; %s.", p.object(), d.Owner, d.VariantWhy),
			Fix:      forwardingFix(d)}, nil
	}
	s := "No broken layer found: forwarding is on and set by the manifest"
	if nat.Masqueraded() {
		s += ", the client pool is masqueraded"
	}
	switch {
	case clErr == nil && cl.Skip == "":
		s += ", and every hop answered from this machine through the tunnel."
	case err == nil:
		s += ", and every hop answered from inside the pod; run with --from-client on a connected machine to test the path through the tunnel."
	default:
		s += "."
	}
	return verdict{Severity: engine.SeverityInfo, Layer: "none", Sentence: s, Evidence: ev}, nil
}

// ladderVerdict names the layer of the first failed hop.
func (t *vpnTrace) ladderVerdict(ctx context.Context, p *vpnPod, h hopResult, fromClient bool, tun tunnelFact, nat natFact, natErr error, ev map[string]any) verdict {
	where := "from inside " + p.object()
	if fromClient {
		where = "from this machine through the tunnel"
	}
	switch h.Hop {
	case hopPeer:
		return verdict{Severity: engine.SeverityFail, Layer: "tunnel", Evidence: ev,
			Sentence: fmt.Sprintf("The tunnel itself: %s the server's tunnel address %s does not answer, so nothing beyond it can; check that the client is connected and the server is up (the pod's forwarding is on).", where, h.Target),
			Fix:      fmt.Sprintf("kubectl -n %s logs %s -c %s --tail=50", p.Ref.Namespace, p.Ref.Name, p.Container)}
	case hopPodIP:
		if fromClient {
			switch {
			case natErr == nil && nat.Unknown == "" && !nat.Masqueraded():
				return t.returnPathVerdict(ctx, p, tun, nat, ev, fmt.Sprintf(" (from this machine: the server answered, %s was silent)", h.Target))
			case natErr == nil && len(nat.Policies) > 0:
				m := nat.Policies[0]
				return verdict{Severity: engine.SeverityFail, Layer: "policy", Evidence: ev, Sentence: "Policy: " + m.Message + ".", Fix: m.Fix}
			}
			return verdict{Severity: engine.SeverityFail, Layer: "policy or CNI", Evidence: ev,
				Sentence: fmt.Sprintf("Policy or CNI: forwarding is on and the pool is masqueraded, yet %s %s does not answer: a NetworkPolicy selecting it, or the CNI, drops the VPN pod's forwarded packets.", where, h.Target),
				Fix:      "kubectl get networkpolicy -A   # look for policies selecting the target pod, and admit the VPN pod " + p.Ref.String()}
		}
		return verdict{Severity: engine.SeverityFail, Layer: "policy or CNI", Evidence: ev,
			Sentence: fmt.Sprintf("Policy or CNI, not forwarding: even %s, %s does not answer, so the VPN pod's own traffic to pods is dropped (a NetworkPolicy egress rule on the VPN pod or an ingress rule on the target, or the CNI).", where, h.Target),
			Fix:      "kubectl get networkpolicy -A   # egress rules selecting " + p.Ref.String() + ", ingress rules selecting the target"}
	case hopVIP:
		return verdict{Severity: engine.SeverityFail, Layer: "policy or CNI", Evidence: ev,
			Sentence: fmt.Sprintf("The Service layer or policy: %s a pod answers but the cluster DNS VIP %s does not (%s): kube-proxy's rules for the Service, its endpoints, or a policy on the DNS pods.", where, h.Target, h.Detail),
			Fix:      "kubectl -n kube-system get endpointslices -l kubernetes.io/service-name=kube-dns"}
	case hopNames: // only from the client: in-pod resolver failures are not the clients' path
		return t.dnsPlumbingVerdict(ctx, tun, h, ev)
	case hopPublic:
		return verdict{Severity: engine.SeverityWarn, Layer: "egress", Evidence: ev,
			Sentence: fmt.Sprintf("Egress: %s everything inside the cluster answers but %s does not: the nodes' outbound NAT or an egress policy, not the VPN.", where, h.Target)}
	}
	return verdict{Severity: engine.SeverityWarn, Layer: h.Hop, Evidence: ev, Sentence: h.String()}
}

func (t *vpnTrace) returnPathVerdict(ctx context.Context, p *vpnPod, tun tunnelFact, nat natFact, ev map[string]any, seen string) verdict {
	return verdict{Severity: engine.SeverityFail, Layer: "return path", Evidence: ev,
		Sentence: fmt.Sprintf("The return path: forwarding is on in %s, but the client pool %s is not masqueraded, so replies go to addresses the cluster network does not route back%s; masquerade the pool in the pod.", p.object(), nat.Pool, seen),
		Fix:      masqueradeFixYAML(t.podOwner(ctx, p), containerImage(p.Pod, p.Container), nat.Pool, tun.Uplink)}
}

// dnsPlumbingVerdict: through the tunnel the VIP answers a DNS question sent to its address,
// names do not resolve through this machine's resolver: it is not pointed at the cluster DNS.
func (t *vpnTrace) dnsPlumbingVerdict(ctx context.Context, tun tunnelFact, h hopResult, ev map[string]any) verdict {
	vip := "CLUSTER_DNS_IP"
	if lt, err := t.ladderTargets(ctx); err == nil && lt.VIP.IsValid() {
		vip = lt.VIP.String()
	}
	domain := strings.TrimPrefix(h.Target, "kubernetes.default.")
	fix := "# in the OpenVPN server configuration, then restart the server and reconnect:\n" +
		"push \"dhcp-option DNS " + vip + "\"\n" +
		"push \"dhcp-option DOMAIN " + domain + "\""
	why := "the server does not push the cluster DNS"
	if len(tun.Config.PushDNS) > 0 {
		why = fmt.Sprintf("the server pushes DNS %v, and this machine does not use it (its OpenVPN client does not apply pushed DNS options)", tun.Config.PushDNS)
	}
	return verdict{Severity: engine.SeverityFail, Layer: "DNS plumbing", Evidence: ev, Fix: fix,
		Sentence: fmt.Sprintf("DNS plumbing, not forwarding: through the tunnel the cluster DNS VIP %s answers a question sent to its address, but %s does not resolve through this machine's resolver (%s): %s.", vip, h.Target, h.Detail, why)}
}

func forwardingFix(d durabilityFact) string {
	fix := forwardingFixYAML(d.Owner, d.Variant)
	if d.Chart != "" {
		fix = "# installed by the chart " + d.Chart + ": if it has a forwarding switch (stable/openvpn: ipForwardInitContainer: true), set it in your values instead\n" + fix
	}
	return fix
}

func ladderSummary(l hopLadder) []string {
	out := make([]string, 0, len(l))
	for _, h := range l {
		out = append(out, h.String())
	}
	return out
}

// verdictCode is the finding code of a verdict's layer.
func verdictCode(layer string) string {
	switch layer {
	case "forwarding off":
		return "VPN008-FORWARDING-OFF"
	case "tunnel":
		return "VPN008-TUNNEL"
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
