// Package probetest stands real servers on loopback in for the cluster's addresses: a DNS server
// answering like the zone's CoreDNS (with faults on demand), HTTPS servers with certificates from
// a throwaway CA, and blackholes that read and never answer. Tests map the Service's address
// and port to these with Redirect. Everything listens on 127.0.0.0/8 only.
package probetest

import (
	"net"
	"net/netip"
	"testing"
)

// listenPair binds UDP and TCP on the same free port of ip, so one AddrPort names both, as for a
// DNS Service exposing 53/UDP and 53/TCP.
func listenPair(t testing.TB, ip string) (net.PacketConn, net.Listener, netip.AddrPort) {
	t.Helper()
	requireLoopback(t, ip)
	const tries = 20
	var lastErr error
	for range tries {
		pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatalf("listen udp on %s: %v", ip, err)
		}
		ap := pc.LocalAddr().(*net.UDPAddr).AddrPort()
		ln, err := net.Listen("tcp", ap.String())
		if err != nil {
			lastErr = err
			_ = pc.Close()
			continue // the port is free for UDP but taken for TCP: try another
		}
		return pc, ln, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	t.Fatalf("no port free for both UDP and TCP on %s after %d tries: %v", ip, tries, lastErr)
	return nil, nil, netip.AddrPort{}
}

// requireLoopback refuses anything but loopback: tests never send a packet elsewhere.
func requireLoopback(t testing.TB, ip string) {
	t.Helper()
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.IsLoopback() {
		t.Fatalf("probetest listens on loopback only, got %q", ip)
	}
}

// Redirect maps the addresses a check means to the loopback servers standing in for them; an
// address not in the map is dialled as is (tests use loopback Service addresses too).
func Redirect(m map[netip.AddrPort]netip.AddrPort) func(netip.AddrPort) netip.AddrPort {
	return func(a netip.AddrPort) netip.AddrPort {
		if to, ok := m[a]; ok {
			return to
		}
		return a
	}
}
