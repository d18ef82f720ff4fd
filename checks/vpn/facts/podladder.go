package facts

import (
	"context"
	"net/netip"
	"slices"
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
	w := &walker{stops: func(r HopResult) bool { return !slices.Contains(PodSideHops, r.Hop) }}
	probe := func(hop, target string, probes []podProbe) func() HopResult {
		return func() HopResult { return g.runPodProbes(ctx, m, tb, hop, target, limit, probes) }
	}
	if len(tun.Peers) > 0 {
		peer := tun.Peers[0]
		w.step(HopPeer, peer, peer.String(), probe(HopPeer, peer.String(), append([]podProbe{pingProbe(peer, limit)}, tcpProbes(tb, peer, 1194, limit)...)))
	} else {
		w.skip(HopPeer, "no client address known (no point-to-point peer, no status file listing clients)")
	}
	if lt.PodIP.IsValid() {
		target := lt.PodIP.String() + " (" + lt.PodDesc + ")"
		var probes []podProbe
		switch {
		case lt.PodIsDNS:
			probes = dnsProbes(tb, lt.PodIP, lt.Name, limit)
		case lt.PodPort != 0:
			probes = tcpProbes(tb, lt.PodIP, lt.PodPort, limit)
		}
		w.step(HopPodIP, lt.PodIP, target, probe(HopPodIP, target, append(probes, pingProbe(lt.PodIP, limit))))
	} else {
		w.skip(HopPodIP, "no pod to aim at (--pod-target)")
	}
	if lt.VIP.IsValid() {
		target := lt.VIP.String() + " (" + lt.VIPDesc + ")"
		w.step(HopVIP, lt.VIP, target, probe(HopVIP, target, dnsProbes(tb, lt.VIP, lt.Name, limit)))
	} else {
		w.skip(HopVIP, "no cluster DNS Service found (--cluster-dns)")
	}
	w.step(HopNames, netip.Addr{}, lt.Name, probe(HopNames, lt.Name, resolveProbes(tb, lt.Name+".", limit)))
	if lt.Public != "" {
		w.step(HopPublic, publicAddr(lt.Public), lt.Public, probe(HopPublic, lt.Public, publicProbes(tb, lt.Public, limit)))
	} else {
		w.skip(HopPublic, "not asked (--public ADDRESS[:PORT])")
	}
	return w.ladder, nil
}

// publicAddr is --public's address (invalid for a host name).
func publicAddr(hostPort string) netip.Addr {
	ap, err := netip.ParseAddrPort(hostPort)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}
