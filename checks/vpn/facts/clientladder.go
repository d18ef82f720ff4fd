package facts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// walkClientLadder walks the ladder from this machine, through the tunnel, when it is
// connected (--from-client). These packets are forwarded by the VPN pod, so this ladder is the
// one that sees forwarding and the return path.
func (g *Gatherer) walkClientLadder(ctx context.Context) (ClientLadder, error) {
	if !g.opts.FromClient {
		return ClientLadder{Skip: "not asked: --from-client walks the ladder from this machine through the tunnel"}, nil
	}
	pl, err := g.pods.get(ctx, g.findPods)
	if err != nil {
		return ClientLadder{}, err
	}
	var tun Tunnel
	for _, m := range pl.running {
		if f, err := g.podTunnel(ctx, m); err == nil && f.Pool.IsValid() {
			tun = f
			break
		}
	}
	if !tun.Pool.IsValid() {
		return ClientLadder{}, errors.New("the client pool is unknown (see VPN004): cannot tell whether this machine is connected")
	}
	locals, err := g.seams.Prober.LocalAddrs()
	if err != nil {
		return ClientLadder{}, fmt.Errorf("reading this machine's addresses: %w", err)
	}
	var local netip.Addr
	for _, a := range locals {
		if tun.Pool.Contains(a) {
			local = a
		}
	}
	if !local.IsValid() {
		return ClientLadder{Skip: fmt.Sprintf("this machine has no address in the client pool %s: connect the VPN, then run again with --from-client", tun.Pool)}, nil
	}
	lt, err := g.targets.get(ctx, g.chooseTargets)
	if err != nil {
		return ClientLadder{}, err
	}
	cl := ClientLadder{Ladder: g.clientHops(ctx, tun, lt, local), Local: local, Routes: g.clientRoutes(tun, lt)}
	if err := unanswered(g.seams.Prober); err != nil {
		return ClientLadder{}, err
	}
	return cl, nil
}

// clientRoutes reads how this machine routes the server's tunnel address, the pod and the VIP.
func (g *Gatherer) clientRoutes(tun Tunnel, lt Targets) ClientRoutes {
	var r ClientRoutes
	text, err := g.seams.Prober.RoutingTable()
	if err != nil {
		r.TableErr = err
	} else {
		r.Table = linuxnet.ParseProcRoute(text, bigEndianHost())
	}
	for _, dest := range []netip.Addr{tun.ServerAddr, lt.PodIP, lt.VIP} {
		if !dest.IsValid() || r.For(dest) != nil {
			continue
		}
		to := RouteTo{Dest: dest, Route: longestMatch(r.Table, dest)}
		to.Source, to.SourceErr = g.seams.Prober.SourceFor(dest)
		if errors.Is(to.SourceErr, syscall.ENETUNREACH) {
			to.NoRoute, to.SourceErr = true, nil
		}
		to.ThroughTunnel = to.SourceErr == nil && !to.NoRoute && tun.Pool.Contains(to.Source)
		r.To = append(r.To, to)
	}
	return r
}

// longestMatch is the route the kernel's main table chooses for dest (nil: none).
func longestMatch(table []linuxnet.Route, dest netip.Addr) *linuxnet.Route {
	var best *linuxnet.Route
	for i := range table {
		if table[i].Dest.Contains(dest) && (best == nil || table[i].Dest.Bits() > best.Dest.Bits()) {
			best = &table[i]
		}
	}
	return best
}

// bigEndianHost reports whether this machine prints /proc/net/route's words big-endian.
func bigEndianHost() bool {
	switch runtime.GOARCH {
	case "s390x", "ppc64", "mips", "mips64", "sparc64":
		return true
	}
	return false
}

// clientHops walks the hops; the first failed one ends the walk. The DNS hops that answered are
// swept with Don't-Fragment questions.
func (g *Gatherer) clientHops(ctx context.Context, tun Tunnel, lt Targets, local netip.Addr) Ladder {
	c := &clientWalk{ctx: ctx, limit: g.hopTimeout(), prober: g.seams.Prober, name: lt.Name,
		w: &walker{stops: func(HopResult) bool { return true }},
		mtu: func(to netip.AddrPort) *MTUProbe {
			m := g.clientMTU(ctx, to, local)
			return &m
		}}
	if tun.ServerAddr.IsValid() {
		to := netip.AddrPortFrom(tun.ServerAddr, 1194)
		c.step(HopPeer, tun.ServerAddr, tun.ServerAddr.String(), "TCP connect to "+to.String()+" (a refusal proves the round trip too)", c.connect(to))
	} else {
		c.w.skip(HopPeer, "the server's tunnel address is unknown")
	}
	c.podIP(lt)
	if lt.VIP.IsValid() {
		to := netip.AddrPortFrom(lt.VIP, 53)
		c.step(HopVIP, lt.VIP, lt.VIP.String()+" ("+lt.VIPDesc+")", "DNS question A "+lt.Name+" over UDP to "+to.String(), c.query(to))
	} else {
		c.w.skip(HopVIP, "no cluster DNS Service found (--cluster-dns)")
	}
	c.step(HopNames, netip.Addr{}, lt.Name, "this machine's resolver", func(ctx context.Context) HopResult {
		addrs, err := c.prober.Resolve(ctx, lt.Name)
		if err != nil {
			return HopResult{State: HopSilent, Detail: "not resolved: " + err.Error()}
		}
		return HopResult{State: HopAnswered, Detail: fmt.Sprint("resolved to ", addrs)}
	})
	c.public(lt.Public)
	c.sweeps.Wait()
	return c.w.ladder
}

// clientWalk sends one ladder's packets from this machine, each hop bounded by limit.
type clientWalk struct {
	ctx    context.Context
	limit  time.Duration
	prober ClientProber
	name   string
	w      *walker
	mtu    func(to netip.AddrPort) *MTUProbe
	// sweeps are the MTU sweeps in flight beside the next hops (clientHops waits for them).
	sweeps sync.WaitGroup
}

func (c *clientWalk) step(hop string, addr netip.Addr, target, method string, run func(context.Context) HopResult) {
	c.w.step(hop, addr, target, func() HopResult {
		hctx, cancel := context.WithTimeout(c.ctx, c.limit)
		defer cancel()
		r := run(hctx)
		r.Hop, r.Target, r.Method = hop, target, method
		return r
	})
}

func (c *clientWalk) connect(to netip.AddrPort) func(context.Context) HopResult {
	return func(ctx context.Context) HopResult { return connectResult(ctx, c.prober.Connect(ctx, to), c.limit) }
}

func (c *clientWalk) query(to netip.AddrPort) func(context.Context) HopResult {
	return func(ctx context.Context) HopResult {
		rcode, err := c.prober.QueryA(ctx, to, c.name)
		r := queryResult(ctx, rcode, err, c.limit)
		if r.State == HopAnswered && c.mtu != nil {
			mtu := &MTUProbe{}
			r.MTU = mtu
			c.sweeps.Go(func() { *mtu = *c.mtu(to) })
		}
		return r
	}
}

// podIP asks a DNS pod a question, or connects to another pod's port.
func (c *clientWalk) podIP(lt Targets) {
	switch {
	case lt.PodIP.IsValid() && lt.PodIsDNS:
		to := netip.AddrPortFrom(lt.PodIP, 53)
		c.step(HopPodIP, lt.PodIP, lt.PodIP.String()+" ("+lt.PodDesc+")", "DNS question A "+lt.Name+" over UDP to "+to.String(), c.query(to))
	case lt.PodIP.IsValid():
		port := lt.PodPort
		if port == 0 {
			port = 1 // nothing listens: the pod's kernel answers with a reset
		}
		to := netip.AddrPortFrom(lt.PodIP, port)
		c.step(HopPodIP, lt.PodIP, lt.PodIP.String()+" ("+lt.PodDesc+")", "TCP connect to "+to.String(), c.connect(to))
	default:
		c.w.skip(HopPodIP, "no pod to aim at (--pod-target)")
	}
}

// public connects to --public (a name is resolved here).
func (c *clientWalk) public(hostPort string) {
	switch ap, err := netip.ParseAddrPort(hostPort); {
	case hostPort == "":
		c.w.skip(HopPublic, "not asked (--public ADDRESS[:PORT])")
	case err == nil:
		c.step(HopPublic, ap.Addr(), hostPort, "TCP connect", c.connect(ap))
	default:
		// The name goes through the prober too (its resolver, then a connect to the first
		// address), so that a recording holds this hop and a replay sends nothing.
		c.step(HopPublic, netip.Addr{}, hostPort, "TCP connect (name resolved here)", func(ctx context.Context) HopResult {
			host, portText, _ := net.SplitHostPort(hostPort) // parsePublic joined it
			port, _ := strconv.ParseUint(portText, 10, 16)
			addrs, err := c.prober.Resolve(ctx, host)
			if err != nil || len(addrs) == 0 {
				return HopResult{State: HopSilent, Detail: fmt.Sprintf("%s not resolved: %v", host, err)}
			}
			return connectResult(ctx, c.prober.Connect(ctx, netip.AddrPortFrom(addrs[0], uint16(port))), c.limit)
		})
	}
}
