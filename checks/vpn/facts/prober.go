package facts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// ClientProber sends the client-side ladder's packets from this machine.
//
// Without raw sockets there is no ping from here, so every hop is a real exchange: a TCP
// connection (accepted or refused, either proves the round trip; only silence fails), a DNS
// question over UDP to the pod or VIP, the system resolver for names.
type ClientProber interface {
	LocalAddrs() ([]netip.Addr, error)
	Connect(ctx context.Context, to netip.AddrPort) error
	QueryA(ctx context.Context, server netip.AddrPort, name string) (rcode string, err error)
	Resolve(ctx context.Context, name string) ([]netip.Addr, error)
	// RoutingTable is this machine's /proc/net/route (Linux only).
	RoutingTable() (string, error)
	// SourceFor is the source address the kernel picks for dest (no packet is sent).
	SourceFor(dest netip.Addr) (netip.Addr, error)
	// InterfaceMTU is the MTU of the interface holding local.
	InterfaceMTU(local netip.Addr) (int, error)
	// SendDF sends a DNS question padded to size bytes (the IP packet) with Don't Fragment
	// to a DNS server and says what came of it; err when this machine cannot send such
	// probes at all.
	SendDF(ctx context.Context, to netip.AddrPort, size int) (SizeResult, error)
}

// NetProber is the real ClientProber: this machine's sockets and resolver.
type NetProber struct{}

// LocalAddrs lists this machine's addresses.
func (NetProber) LocalAddrs() ([]netip.Addr, error) {
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

// Connect opens and closes a TCP connection.
func (NetProber) Connect(ctx context.Context, to netip.AddrPort) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", to.String())
	if err == nil {
		return c.Close()
	}
	return err
}

// QueryA asks server for name's A records over UDP and returns the answer's rcode.
func (NetProber) QueryA(ctx context.Context, server netip.AddrPort, name string) (string, error) {
	timeout := time.Until(deadlineOr(ctx, time.Now().Add(defaultHopTimeout)))
	r, err := (&probe.DNSClient{Timeout: timeout}).Query(ctx, server, name, dns.TypeA, "udp")
	if err != nil {
		return "", err
	}
	return r.RcodeName(), nil
}

// Resolve asks this machine's resolver.
func (NetProber) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
}

// RoutingTable reads /proc/net/route.
func (NetProber) RoutingTable() (string, error) {
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("the routing table is read on Linux only (this is %s): the source address the kernel picks tells the tunnel instead", runtime.GOOS)
	}
	b, err := os.ReadFile("/proc/net/route")
	return string(b), err
}

// SourceFor asks the kernel which source address it would use for dest: connecting a UDP
// socket selects a route and sends nothing.
func (NetProber) SourceFor(dest netip.Addr) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(dest, 9)))
	if err != nil {
		return netip.Addr{}, err
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

// InterfaceMTU finds the interface that holds local.
func (NetProber) InterfaceMTU(local netip.Addr) (int, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0, err
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == local {
				return i.MTU, nil
			}
		}
	}
	return 0, fmt.Errorf("no interface holds %s", local)
}

// paddedQuestion is an A question for name padded (EDNS0 padding, RFC 7830) so that the IP
// packet carrying it over UDP is size bytes, or the smallest such question when size is below
// it; it returns the message and the IP packet's size.
func paddedQuestion(name string, size int) ([]byte, uint16, int, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(4096, false)
	pad := max(size-28-m.Len()-4, 0) // IPv4 and UDP headers; the padding option's own header
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_PADDING{Padding: make([]byte, pad)})
	wire, err := m.Pack()
	return wire, m.Id, len(wire) + 28, err
}

func deadlineOr(ctx context.Context, def time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Before(def) {
		return d
	}
	return def
}

// connectResult reads a TCP connect's outcome as a hop state.
func connectResult(ctx context.Context, err error, limit time.Duration) HopResult {
	switch {
	case err == nil:
		return HopResult{State: HopAnswered, Detail: "connected"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return HopResult{State: HopAnswered, Detail: "connection refused: the host answered"}
	case ctx.Err() != nil || isTimeoutErr(err):
		return HopResult{State: HopSilent, Detail: fmt.Sprintf("no answer within %s", limit)}
	}
	return HopResult{State: HopSilent, Detail: err.Error()}
}

func queryResult(ctx context.Context, rcode string, err error, limit time.Duration) HopResult {
	switch {
	case err == nil:
		return HopResult{State: HopAnswered, Detail: rcode}
	case errors.Is(err, syscall.ECONNREFUSED):
		return HopResult{State: HopRefused, Detail: "ICMP port unreachable: nothing serves DNS there, e.g. a Service without ready endpoints"}
	case probe.IsNoAnswer(err) || ctx.Err() != nil || isTimeoutErr(err):
		return HopResult{State: HopSilent, Detail: fmt.Sprintf("no DNS answer within %s", limit)}
	}
	return HopResult{State: HopSilent, Detail: err.Error()}
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
