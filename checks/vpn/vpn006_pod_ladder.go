package vpn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// VPNPodLadder is VPN006: the hop ladder from inside each VPN pod. These packets leave from
// the pod itself, so they need no forwarding: the ladder tests what lies beyond the pod (the
// CNI, policies, the Service VIP, DNS) and tells those layers apart from forwarding.
func VPNPodLadder(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN006", func(ctx context.Context) engine.Outcome { return t.podLadderOutcome(ctx) })
}

func (t *vpnTrace) podLadder(ctx context.Context, p *vpnPod) (hopLadder, error) {
	l, err := p.ladder.get(ctx, func(ctx context.Context) ([]hopResult, error) {
		tb, err := t.podTools(ctx, p)
		if err != nil {
			return nil, err
		}
		lt, err := t.ladderTargets(ctx)
		if err != nil {
			return nil, err
		}
		tun, _ := t.podTunnel(ctx, p)
		limit := t.hopTimeout()
		var ladder hopLadder
		stopped := false
		step := func(hop, target string, run func() hopResult) {
			switch {
			case stopped:
				ladder = append(ladder, hopResult{Hop: hop, Target: target, State: hopNotTried, Detail: "after the first failed hop"})
			default:
				r := run()
				ladder = append(ladder, r)
				// From inside the pod the later hops do not cross the tunnel: a silent peer
				// (no client connected, say) or the pod's own resolver does not make them
				// meaningless.
				stopped = r.failed() && !slices.Contains(podSideHops, hop)
			}
		}
		if len(tun.Peers) > 0 {
			peer := tun.Peers[0]
			step(hopPeer, peer.String(), func() hopResult {
				return t.runPodProbes(ctx, p, tb, hopPeer, peer.String(), limit, append([]podProbe{pingProbe(peer, limit)}, tcpProbes(tb, peer, 1194, limit)...))
			})
		} else {
			ladder = append(ladder, hopResult{Hop: hopPeer, State: hopSkipped, Detail: "no client address known (no point-to-point peer, no status file listing clients)"})
		}
		if lt.PodIP.IsValid() {
			target := lt.PodIP.String() + " (" + lt.PodDesc + ")"
			step(hopPodIP, target, func() hopResult {
				var probes []podProbe
				switch {
				case lt.PodIsDNS:
					probes = dnsProbes(tb, lt.PodIP, lt.Name, limit)
				case lt.PodPort != 0:
					probes = tcpProbes(tb, lt.PodIP, lt.PodPort, limit)
				}
				probes = append(probes, pingProbe(lt.PodIP, limit))
				return t.runPodProbes(ctx, p, tb, hopPodIP, target, limit, probes)
			})
		} else {
			ladder = append(ladder, hopResult{Hop: hopPodIP, State: hopSkipped, Detail: "no pod to aim at (--pod-target)"})
		}
		if lt.VIP.IsValid() {
			target := lt.VIP.String() + " (" + lt.VIPDesc + ")"
			step(hopVIP, target, func() hopResult {
				return t.runPodProbes(ctx, p, tb, hopVIP, target, limit, dnsProbes(tb, lt.VIP, lt.Name, limit))
			})
		} else {
			ladder = append(ladder, hopResult{Hop: hopVIP, State: hopSkipped, Detail: "no cluster DNS Service found (--cluster-dns)"})
		}
		step(hopNames, lt.Name, func() hopResult {
			return t.runPodProbes(ctx, p, tb, hopNames, lt.Name, limit, resolveProbes(tb, lt.Name+".", limit))
		})
		if lt.Public != "" {
			step(hopPublic, lt.Public, func() hopResult {
				return t.runPodProbes(ctx, p, tb, hopPublic, lt.Public, limit, publicProbes(tb, lt.Public, limit))
			})
		} else {
			ladder = append(ladder, hopResult{Hop: hopPublic, State: hopSkipped, Detail: "not asked (--public ADDRESS[:PORT])"})
		}
		return ladder, nil
	})
	return hopLadder(l), err
}

// publicProbes: a TCP connect to host:port (a name is resolved by the tool itself).
func publicProbes(tb toolbox, hostPort string, limit time.Duration) []podProbe {
	host, port, _ := net.SplitHostPort(hostPort)
	n, _ := strconv.Atoi(port)
	if a, err := netip.ParseAddr(host); err == nil {
		return append(tcpProbes(tb, a, uint16(n), limit), pingProbe(a, limit))
	}
	read := tcpProbes(tb, netip.IPv4Unspecified(), uint16(n), limit)[0].read
	return []podProbe{
		{tool: "nc", cmd: []string{"nc", "-z", "-w", secs(limit), host, port}, read: read},
		{tool: "bash", cmd: bounded(tb, limit, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)), read: read},
	}
}

// layerOf names what a failed hop points at.
func layerOf(hop string, fromClient bool) string {
	switch hop {
	case hopPeer:
		if fromClient {
			return "the tunnel itself (the client does not reach the server's tunnel address)"
		}
		return "the tunnel (no client answers through it)"
	case hopPodIP:
		if fromClient {
			return "forwarding or the return path (the peer answers, a pod does not)"
		}
		return "policy or CNI (the VPN pod itself cannot reach another pod)"
	case hopVIP:
		return "the Service layer or policy (a pod answers, the DNS Service VIP does not)"
	case hopNames:
		if fromClient {
			return "DNS plumbing, not forwarding (the DNS VIP answers by address, names do not resolve through the resolver)"
		}
		return "the VPN pod's own resolver, which matters only if the server resolves names itself (clients use the DNS the server pushes)"
	case hopPublic:
		return "egress to the internet (the cluster reaches inside but not outside)"
	}
	return hop
}

func (t *vpnTrace) podLadderOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	type res struct {
		l   hopLadder
		err error
	}
	rs := forEachPod(ctx, pods.Running, func(ctx context.Context, p *vpnPod) res {
		l, err := t.podLadder(ctx, p)
		return res{l, err}
	})
	var fs []engine.Finding
	var errs []error
	for i, r := range rs {
		p := pods.Running[i]
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		fs = append(fs, ladderFindings("VPN006", p.object(), r.l, false)...)
	}
	if len(errs) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: errors.Join(errs...)}
	}
	return engine.Outcome{Findings: fs}
}

// ladderFindings: one finding per hop; the first failed hop is the FAIL naming the layer.
// From inside the pod, a silent client or the pod's own resolver is only a warning (see
// podSideHops).
func ladderFindings(id, obj string, l hopLadder, fromClient bool) []engine.Finding {
	first := l.firstFailed()
	if !fromClient {
		first = l.firstFailedExcept(podSideHops...)
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
		f := engine.Finding{Code: id + "-HOP", Severity: engine.SeverityInfo, Object: obj, Evidence: ev, Message: fmt.Sprintf("hop %d, %s", i+1, h)}
		switch {
		case first != nil && h.Hop == first.Hop:
			f.Code, f.Severity = id+"-FIRST-SILENT-HOP", engine.SeverityFail
			f.Message = fmt.Sprintf("hop %d, %s: the first silent hop points at %s", i+1, h, layerOf(h.Hop, fromClient))
		case h.failed():
			f.Code, f.Severity = id+"-SILENT-HOP", engine.SeverityWarn
			if !fromClient && h.Hop == hopNames {
				f.Message += ": " + layerOf(h.Hop, false)
			}
		case h.State == hopUnmeasured:
			f.Code, f.Severity = id+"-UNMEASURED", engine.SeverityWarn
			f.Message += ": not measured, nothing concluded"
		}
		fs = append(fs, f)
	}
	return fs
}
