package vpn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// VPNClientLadder is VPN007: the same ladder from this machine, through the tunnel, when it is
// connected (--from-client). These packets are forwarded by the VPN pod, so this ladder is the
// one that sees forwarding and the return path.
//
// Without raw sockets there is no ping from here, so every hop is a real exchange: a TCP
// connection (accepted or refused, either proves the round trip; only silence fails), a DNS
// question over UDP to the pod or VIP, the system resolver for names.
func VPNClientLadder(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN007", func(ctx context.Context) engine.Outcome { return t.clientLadderOutcome(ctx) })
}

// clientProber sends the client-side packets (replaced in tests).
type clientProber interface {
	LocalAddrs() ([]netip.Addr, error)
	Connect(ctx context.Context, to netip.AddrPort) error
	QueryA(ctx context.Context, server netip.AddrPort, name string) (rcode string, err error)
	Resolve(ctx context.Context, name string) ([]netip.Addr, error)
}

// netClientProber is the real one: this machine's sockets and resolver.
type netClientProber struct{}

func (netClientProber) LocalAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}

func (netClientProber) Connect(ctx context.Context, to netip.AddrPort) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", to.String())
	if err == nil {
		return c.Close()
	}
	return err
}

func (netClientProber) QueryA(ctx context.Context, server netip.AddrPort, name string) (string, error) {
	timeout := time.Until(deadlineOr(ctx, time.Now().Add(defaultHopTimeout)))
	r, err := (&probe.DNSClient{Timeout: timeout}).Query(ctx, server, name, dns.TypeA, "udp")
	if err != nil {
		return "", err
	}
	return r.RcodeName(), nil
}

func (netClientProber) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
}

func deadlineOr(ctx context.Context, def time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Before(def) {
		return d
	}
	return def
}

// clientLadder is VPN007's fact: Skip says why it was not walked.
type clientLadder struct {
	Ladder hopLadder
	Skip   string
	Local  netip.Addr
}

func (c clientLadder) hop(name string) *hopResult {
	if c.Skip != "" {
		return nil
	}
	return c.Ladder.hop(name)
}

func (t *vpnTrace) clientLadderFact(ctx context.Context) (clientLadder, error) {
	return t.client.get(ctx, t.walkClientLadder)
}

func (t *vpnTrace) walkClientLadder(ctx context.Context) (clientLadder, error) {
	if !t.env.Options.FromClient {
		return clientLadder{Skip: "not asked: --from-client walks the ladder from this machine through the tunnel"}, nil
	}
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return clientLadder{}, err
	}
	var tun tunnelFact
	for _, p := range pods.Running {
		if f, err := t.podTunnel(ctx, p); err == nil && f.Pool.IsValid() {
			tun = f
			break
		}
	}
	if !tun.Pool.IsValid() {
		return clientLadder{}, errors.New("the client pool is unknown (see VPN004): cannot tell whether this machine is connected")
	}
	locals, err := t.prober.LocalAddrs()
	if err != nil {
		return clientLadder{}, fmt.Errorf("reading this machine's addresses: %w", err)
	}
	var local netip.Addr
	for _, a := range locals {
		if tun.Pool.Contains(a) {
			local = a
		}
	}
	if !local.IsValid() {
		return clientLadder{Skip: fmt.Sprintf("this machine has no address in the client pool %s: connect the VPN, then run again with --from-client", tun.Pool)}, nil
	}
	lt, err := t.ladderTargets(ctx)
	if err != nil {
		return clientLadder{}, err
	}
	limit := t.hopTimeout()
	var ladder hopLadder
	stopped := false
	step := func(hop, target, method string, run func(context.Context) hopResult) {
		if stopped {
			ladder = append(ladder, hopResult{Hop: hop, Target: target, State: hopNotTried, Detail: "after the first failed hop"})
			return
		}
		hctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		r := run(hctx)
		r.Hop, r.Target, r.Method = hop, target, method
		ladder = append(ladder, r)
		stopped = r.failed()
	}
	connect := func(to netip.AddrPort) func(context.Context) hopResult {
		return func(ctx context.Context) hopResult { return connectResult(ctx, t.prober.Connect(ctx, to), limit) }
	}
	query := func(to netip.AddrPort) func(context.Context) hopResult {
		return func(ctx context.Context) hopResult {
			rcode, err := t.prober.QueryA(ctx, to, lt.Name)
			return queryResult(ctx, rcode, err, limit)
		}
	}
	if tun.ServerAddr.IsValid() {
		to := netip.AddrPortFrom(tun.ServerAddr, 1194)
		step(hopPeer, tun.ServerAddr.String(), "TCP connect to "+to.String()+" (a refusal proves the round trip too)", connect(to))
	} else {
		ladder = append(ladder, hopResult{Hop: hopPeer, State: hopSkipped, Detail: "the server's tunnel address is unknown"})
	}
	switch {
	case lt.PodIP.IsValid() && lt.PodIsDNS:
		to := netip.AddrPortFrom(lt.PodIP, 53)
		step(hopPodIP, lt.PodIP.String()+" ("+lt.PodDesc+")", "DNS question A "+lt.Name+" over UDP to "+to.String(), query(to))
	case lt.PodIP.IsValid():
		port := lt.PodPort
		if port == 0 {
			port = 1 // nothing listens: the pod's kernel answers with a reset
		}
		to := netip.AddrPortFrom(lt.PodIP, port)
		step(hopPodIP, lt.PodIP.String()+" ("+lt.PodDesc+")", "TCP connect to "+to.String(), connect(to))
	default:
		ladder = append(ladder, hopResult{Hop: hopPodIP, State: hopSkipped, Detail: "no pod to aim at (--pod-target)"})
	}
	if lt.VIP.IsValid() {
		to := netip.AddrPortFrom(lt.VIP, 53)
		step(hopVIP, lt.VIP.String()+" ("+lt.VIPDesc+")", "DNS question A "+lt.Name+" over UDP to "+to.String(), query(to))
	} else {
		ladder = append(ladder, hopResult{Hop: hopVIP, State: hopSkipped, Detail: "no cluster DNS Service found (--cluster-dns)"})
	}
	step(hopNames, lt.Name, "this machine's resolver", func(ctx context.Context) hopResult {
		addrs, err := t.prober.Resolve(ctx, lt.Name)
		if err != nil {
			return hopResult{State: hopSilent, Detail: "not resolved: " + err.Error()}
		}
		return hopResult{State: hopAnswered, Detail: fmt.Sprint("resolved to ", addrs)}
	})
	if lt.Public != "" {
		if ap, err := netip.ParseAddrPort(lt.Public); err == nil {
			step(hopPublic, lt.Public, "TCP connect", connect(ap))
		} else {
			step(hopPublic, lt.Public, "TCP connect (name resolved here)", func(ctx context.Context) hopResult {
				c, err := (&net.Dialer{}).DialContext(ctx, "tcp", lt.Public)
				if err == nil {
					_ = c.Close()
				}
				return connectResult(ctx, err, limit)
			})
		}
	} else {
		ladder = append(ladder, hopResult{Hop: hopPublic, State: hopSkipped, Detail: "not asked (--public ADDRESS[:PORT])"})
	}
	return clientLadder{Ladder: ladder, Local: local}, nil
}

func connectResult(ctx context.Context, err error, limit time.Duration) hopResult {
	switch {
	case err == nil:
		return hopResult{State: hopAnswered, Detail: "connected"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return hopResult{State: hopAnswered, Detail: "connection refused: the host answered"}
	case ctx.Err() != nil || isTimeoutErr(err):
		return hopResult{State: hopSilent, Detail: fmt.Sprintf("no answer within %s", limit)}
	}
	return hopResult{State: hopSilent, Detail: err.Error()}
}

func queryResult(ctx context.Context, rcode string, err error, limit time.Duration) hopResult {
	switch {
	case err == nil:
		return hopResult{State: hopAnswered, Detail: rcode}
	case errors.Is(err, syscall.ECONNREFUSED):
		return hopResult{State: hopRefused, Detail: "ICMP port unreachable: nothing serves DNS there, e.g. a Service without ready endpoints"}
	case probe.IsNoAnswer(err) || ctx.Err() != nil || isTimeoutErr(err):
		return hopResult{State: hopSilent, Detail: fmt.Sprintf("no DNS answer within %s", limit)}
	}
	return hopResult{State: hopSilent, Detail: err.Error()}
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (t *vpnTrace) clientLadderOutcome(ctx context.Context) engine.Outcome {
	cl, err := t.clientLadderFact(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	if cl.Skip != "" {
		return engine.Outcome{Skip: cl.Skip}
	}
	return engine.Outcome{Findings: ladderFindings("VPN007", "this machine ("+cl.Local.String()+")", cl.Ladder, true)}
}
