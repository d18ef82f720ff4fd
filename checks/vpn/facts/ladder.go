package facts

import (
	"fmt"
	"net/netip"
	"slices"
)

// A hop ladder walks outwards from the tunnel: the peer, a pod IP, the cluster DNS VIP asked a
// DNS question (ICMP to a VIP proves nothing: kube-proxy does not answer it), names through
// the resolver, a public address. The first hop that fails names the broken layer.

// HopState is what a hop did.
type HopState string

// The hop states.
const (
	HopAnswered   HopState = "answered"
	HopRefused    HopState = "refused" // a DNS server that refuses, or a VIP with no endpoints
	HopSilent     HopState = "silent"
	HopUnmeasured HopState = "unmeasured" // no tool, no permission: nothing is concluded
	HopSkipped    HopState = "skipped"    // not applicable or not asked
	HopNotTried   HopState = "not tried"  // after the first failed hop
)

// The hops, in ladder order.
const (
	HopPeer   = "tunnel peer"
	HopPodIP  = "pod IP"
	HopVIP    = "cluster DNS VIP"
	HopNames  = "names"
	HopPublic = "public address"
)

// HopResult is one hop of a ladder.
type HopResult struct {
	Hop string
	// Addr is the target's address when it has one (not for names).
	Addr   netip.Addr
	Target string
	Method string
	State  HopState
	Detail string
	// MTU is the Don't-Fragment sweep of a hop that answered (nil: not probed).
	MTU *MTUProbe
}

// Failed reports whether the hop was silent or refused.
func (h HopResult) Failed() bool { return h.State == HopSilent || h.State == HopRefused }

func (h HopResult) String() string {
	s := fmt.Sprintf("%s %s: %s", h.Hop, h.Target, h.State)
	if h.Detail != "" {
		s += " (" + h.Detail + ")"
	}
	return s
}

// Ladder is the hops in the order they were walked.
type Ladder []HopResult

// Hop returns the hop named name, nil when the ladder has none.
func (l Ladder) Hop(name string) *HopResult {
	for i := range l {
		if l[i].Hop == name {
			return &l[i]
		}
	}
	return nil
}

// FirstFailed is the first silent or refused hop, nil when none failed.
func (l Ladder) FirstFailed() *HopResult { return l.FirstFailedExcept() }

// FirstFailedExcept is the first failed hop that is not one of hops.
func (l Ladder) FirstFailedExcept(hops ...string) *HopResult {
	for i := range l {
		if l[i].Failed() && !slices.Contains(hops, l[i].Hop) {
			return &l[i]
		}
	}
	return nil
}

// Summary is the ladder as one line per hop, for evidence.
func (l Ladder) Summary() []string {
	out := make([]string, 0, len(l))
	for _, h := range l {
		out = append(out, h.String())
	}
	return out
}

// PodSideHops are the in-pod hops whose failure does not break the clients' path: a client
// that does not answer the pod's ping (many drop it), and the pod's own resolver (clients use
// the DNS the server pushes, not the pod's resolv.conf).
var PodSideHops = []string{HopPeer, HopNames}

// walker walks a ladder: once a hop fails (and stops counts it), the later hops are not tried.
type walker struct {
	ladder  Ladder
	stopped bool
	// stops tells whether a failed hop ends the walk.
	stops func(HopResult) bool
}

// step runs the hop unless the walk has stopped.
func (w *walker) step(hop string, addr netip.Addr, target string, run func() HopResult) {
	if w.stopped {
		w.ladder = append(w.ladder, HopResult{Hop: hop, Addr: addr, Target: target, State: HopNotTried, Detail: "after the first failed hop"})
		return
	}
	r := run()
	r.Addr = addr
	w.ladder = append(w.ladder, r)
	w.stopped = r.Failed() && w.stops(r)
}

// skip records a hop that does not apply.
func (w *walker) skip(hop, why string) {
	w.ladder = append(w.ladder, HopResult{Hop: hop, State: HopSkipped, Detail: why})
}
