package facts

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// walkPodLadder walks the ladder from inside the pod. These packets leave from the pod itself,
// so they need no forwarding: the ladder tests what lies beyond the pod (the CNI, policies,
// the Service VIP, DNS) and tells those layers apart from forwarding.
func (g *Gatherer) walkPodLadder(ctx context.Context, m *podMemos) (Ladder, error) {
	tb, err := g.podTools(ctx, m)
	if err != nil {
		return nil, err
	}
	lt, err := g.targets.get(ctx, g.chooseTargets)
	if err != nil {
		return nil, err
	}
	tun, _ := g.podTunnel(ctx, m)
	limit := g.hopTimeout()
	// From inside the pod the later hops do not cross the tunnel: a silent peer (no client
	// connected, say) or the pod's own resolver does not make them meaningless.
	p := &podWalk{g: g, ctx: ctx, m: m, tb: tb, limit: limit, routes: tun.Routes,
		w: &walker{stops: func(r HopResult) bool { return !slices.Contains(PodSideHops, r.Hop) }}}
	if len(tun.Peers) > 0 {
		peer := tun.Peers[0]
		p.step(HopPeer, peer, peer.String(), p.withMTU(peer, p.probe(HopPeer, peer.String(), append([]podProbe{pingProbe(peer, limit)}, tcpProbes(tb, peer, 1194, limit)...))))
	} else {
		p.skip(HopPeer, "no client address known (no point-to-point peer, no status file listing clients)")
	}
	p.podIP(lt)
	if lt.VIP.IsValid() {
		target := lt.VIP.String() + " (" + lt.VIPDesc + ")"
		p.step(HopVIP, lt.VIP, target, p.probe(HopVIP, target, dnsProbes(tb, lt.VIP, lt.Name, limit)))
	} else {
		p.skip(HopVIP, "no cluster DNS Service found (--cluster-dns)")
	}
	p.step(HopNames, netip.Addr{}, lt.Name, p.probe(HopNames, lt.Name, resolveProbes(tb, lt.Name+".", limit)))
	if lt.Public != "" {
		p.step(HopPublic, publicAddr(lt.Public), lt.Public, p.probe(HopPublic, lt.Public, publicProbes(tb, lt.Public, limit)))
	} else {
		p.skip(HopPublic, "not asked (--public ADDRESS[:PORT])")
	}
	p.walk()
	p.sweeps.Wait()
	return p.w.ladder, nil
}

// plannedHop is one hop of a pod ladder: its probe, or why it is skipped.
type plannedHop struct {
	hop, target, skip string
	addr              netip.Addr
	run               func() HopResult
	result            HopResult
}

// step plans a hop; walk probes it.
func (p *podWalk) step(hop string, addr netip.Addr, target string, run func() HopResult) {
	p.plan = append(p.plan, &plannedHop{hop: hop, addr: addr, target: target, run: run})
}

// skip plans a hop that does not apply.
func (p *podWalk) skip(hop, why string) {
	p.plan = append(p.plan, &plannedHop{hop: hop, skip: why})
}

// walk probes every planned hop at once, then reads them in ladder order: a hop after the
// first failed one (that stops the walk) is "not tried", and what it found is dropped. From
// inside the pod no hop waits on another's packets, and each probe is an exec that costs
// hundreds of milliseconds on a loaded cluster: in a row, the ladder's execs added up; at once,
// it costs its slowest hop. The price is the few probes of hops the first failure makes moot
// (bounded: one probe per hop and tool, each with the hop timeout).
func (p *podWalk) walk() {
	var wg sync.WaitGroup
	for _, h := range p.plan {
		if h.skip == "" {
			wg.Go(func() { h.result = h.run() })
		}
	}
	wg.Wait()
	for _, h := range p.plan {
		if h.skip != "" {
			p.w.skip(h.hop, h.skip)
			continue
		}
		p.w.step(h.hop, h.addr, h.target, func() HopResult { return h.result })
	}
}

// podWalk sends one ladder's probes from inside a pod.
type podWalk struct {
	g      *Gatherer
	ctx    context.Context
	m      *podMemos
	tb     toolbox
	limit  time.Duration
	routes []linuxnet.Route
	w      *walker
	plan   []*plannedHop
	// sweeps are the MTU sweeps in flight: a hop's sweep runs beside the next hops, which
	// do not depend on it.
	sweeps sync.WaitGroup
}

func (p *podWalk) probe(hop, target string, probes []podProbe) func() HopResult {
	return func() HopResult { return p.g.runPodProbes(p.ctx, p.m, p.tb, hop, target, p.limit, probes) }
}

// withMTU sweeps a hop that answered with Don't-Fragment packets: the peer (through the
// tunnel) and the pod (through the pod network). The sweep runs in the background while the
// walk goes on; walkPodLadder waits for it before the ladder is read.
func (p *podWalk) withMTU(addr netip.Addr, run func() HopResult) func() HopResult {
	return func() HopResult {
		r := run()
		if r.State == HopAnswered {
			mtu := &MTUProbe{}
			r.MTU = mtu
			p.sweeps.Go(func() { *mtu = p.g.podMTU(p.ctx, p.m, p.tb, p.routes, addr) })
		}
		return r
	}
}

// podIP asks a DNS pod a question, or connects to another pod's port, then pings it.
func (p *podWalk) podIP(lt Targets) {
	if !lt.PodIP.IsValid() {
		p.skip(HopPodIP, "no pod to aim at (--pod-target)")
		return
	}
	target := lt.PodIP.String() + " (" + lt.PodDesc + ")"
	var probes []podProbe
	switch {
	case lt.PodIsDNS:
		probes = dnsProbes(p.tb, lt.PodIP, lt.Name, p.limit)
	case lt.PodPort != 0:
		probes = tcpProbes(p.tb, lt.PodIP, lt.PodPort, p.limit)
	}
	p.step(HopPodIP, lt.PodIP, target, p.withMTU(lt.PodIP, p.probe(HopPodIP, target, append(probes, pingProbe(lt.PodIP, p.limit)))))
}

// publicAddr is --public's address (invalid for a host name).
func publicAddr(hostPort string) netip.Addr {
	ap, err := netip.ParseAddrPort(hostPort)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}
