package vpn

import (
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// VPNPodLadder is VPN006: the hop ladder from inside each VPN pod. These packets leave from
// the pod itself, so they need no forwarding: the ladder tests what lies beyond the pod (the
// CNI, policies, the Service VIP, DNS) and tells those layers apart from forwarding.
func VPNPodLadder(env *Env) engine.Check {
	return judged(env, "VPN006", facts.NeedPodLadder, func(run *facts.Run) engine.Outcome {
		return perPod(run, func(p *facts.Pod) ([]engine.Finding, error) {
			if p.LadderErr != nil {
				return nil, p.LadderErr
			}
			return ladderFindings("VPN006", p.Object(), p.Ladder, nil), nil
		})
	})
}

// layerOf names what a failed hop points at.
func layerOf(hop string, fromClient bool) string {
	switch hop {
	case facts.HopPeer:
		if fromClient {
			return "the tunnel itself (the client does not reach the server's tunnel address)"
		}
		return "the tunnel (no client answers through it)"
	case facts.HopPodIP:
		if fromClient {
			return "forwarding or the return path (the peer answers, a pod does not)"
		}
		return "policy or CNI (the VPN pod itself cannot reach another pod)"
	case facts.HopVIP:
		return "the Service layer or policy (a pod answers, the DNS Service VIP does not)"
	case facts.HopNames:
		if fromClient {
			return "DNS plumbing, not forwarding (the DNS VIP answers by address, names do not resolve through the resolver)"
		}
		return "the VPN pod's own resolver, which matters only if the server resolves names itself (clients use the DNS the server pushes)"
	case facts.HopPublic:
		return "egress to the internet (the cluster reaches inside but not outside)"
	}
	return hop
}

// ladderFindings: one finding per hop; the first failed hop is the FAIL naming the layer.
// From inside the pod, a silent client or the pod's own resolver is only a warning (see
// facts.PodSideHops). routes is this machine's routing of the hops (nil: the pod's ladder): a
// hop this machine does not send into the tunnel does not test the VPN, and when it is the
// first silent one the layer is the client's routes.
func ladderFindings(id, obj string, l facts.Ladder, routes *facts.ClientRoutes) []engine.Finding {
	fromClient := routes != nil
	first := l.FirstFailed()
	if !fromClient {
		first = l.FirstFailedExcept(facts.PodSideHops...)
	}
	var fs []engine.Finding
	for i, h := range l {
		ev := map[string]any{"hop": h.Hop, "target": h.Target, "state": string(h.State)}
		if h.Method != "" {
			ev["method"] = h.Method
		}
		if h.Detail != "" {
			ev["detail"] = h.Detail
		}
		layer, outside := layerOf(h.Hop, fromClient), ""
		if r := hopRoute(routes, h, ev); r != nil && !r.ThroughTunnel {
			outside = "this machine " + routeWords(*r)
			layer = "the client's routes, not forwarding: " + outside
		}
		f := engine.Finding{Code: id + "-HOP", Severity: engine.SeverityInfo, Object: obj, Evidence: ev, Message: fmt.Sprintf("hop %d, %s", i+1, h)}
		switch {
		case first != nil && h.Hop == first.Hop:
			f.Code, f.Severity = id+"-FIRST-SILENT-HOP", engine.SeverityFail
			f.Message = fmt.Sprintf("hop %d, %s: the first silent hop points at %s", i+1, h, layer)
		case h.Failed():
			f.Code, f.Severity = id+"-SILENT-HOP", engine.SeverityWarn
			if !fromClient && h.Hop == facts.HopNames {
				f.Message += ": " + layer
			}
		case h.State == facts.HopUnmeasured:
			f.Code, f.Severity = id+"-UNMEASURED", engine.SeverityWarn
			f.Message += ": not measured, nothing concluded"
		case outside != "" && h.State == facts.HopAnswered:
			f.Code, f.Severity = id+"-NOT-THROUGH-TUNNEL", engine.SeverityWarn
			f.Message += ": " + outside + ", so this answer does not test the VPN"
		}
		fs = append(fs, f)
		if bh, ok := mtuFinding(id, obj, i, h, ev); ok {
			fs = append(fs, bh)
		} else if h.MTU != nil && h.MTU.Unmeasured == "" && h.MTU.Largest() > 0 {
			f := &fs[len(fs)-1]
			f.Message += "; " + ev["mtu"].(string)
		}
	}
	return fs
}

// mtuFinding judges a hop's Don't-Fragment sweep (see facts/mtu.go), noting it in ev: a black
// hole is its own finding.
func mtuFinding(id, obj string, i int, h facts.HopResult, ev map[string]any) (engine.Finding, bool) {
	m := h.MTU
	switch {
	case m == nil:
		return engine.Finding{}, false
	case m.Unmeasured != "":
		ev["mtu"] = "not measured: " + m.Unmeasured
		return engine.Finding{}, false
	case m.Largest() == 0:
		ev["mtu"] = "not measured: the small Don't-Fragment probe got no answer"
		return engine.Finding{}, false
	case !m.BlackHole():
		ev["mtu"] = fmt.Sprintf("Don't-Fragment packets up to %d bytes pass", m.Largest())
		for _, s := range m.Sizes {
			if s.State == facts.SizeTooBig {
				ev["mtu"] = fmt.Sprintf("%s, larger ones are refused with path MTU %d (path MTU discovery works)", ev["mtu"], s.MTU)
				break
			}
		}
		return engine.Finding{}, false
	}
	ev["mtu"] = mtuSizes(*m)
	msg := fmt.Sprintf("hop %d, %s %s: small packets pass but Don't-Fragment packets of %d bytes vanish without an ICMP error: a tunnel MTU black hole, the largest size that passes is %d bytes", i+1, h.Hop, h.Target, m.FirstSilent(), m.Largest())
	if again := m.PassedAbove(); len(again) > 0 {
		msg += fmt.Sprintf(" (%v pass again: the sender fragments an encapsulated packet that outgrows its own link, and fragments carry no Don't Fragment)", again)
	}
	return engine.Finding{Code: id + "-MTU-BLACK-HOLE", Severity: engine.SeverityWarn, Object: obj, Evidence: map[string]any{"hop": h.Hop, "target": h.Target, "mtu": ev["mtu"]}, Message: msg}, true
}

// hopRoute is how this machine routes the hop's address (nil: not known), noted in ev.
func hopRoute(routes *facts.ClientRoutes, h facts.HopResult, ev map[string]any) *facts.RouteTo {
	if routes == nil {
		return nil
	}
	r := routes.For(h.Addr)
	switch {
	case r == nil:
		return nil
	case r.SourceErr != nil:
		ev["route"] = "unknown: " + r.SourceErr.Error()
		return nil
	}
	ev["route"] = routeWords(*r)
	return r
}
