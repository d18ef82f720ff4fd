package probetest

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// LAN stands real servers on loopback in for node addresses (the seed's 10.0.10.11-13 by
// default): a zone DNS answering like the seed's Corefile on port 53 of each, and an
// HTTPS proxy answering 302 with a certificate of a throwaway CA on port 443. Redirect maps the
// node addresses to them; an address can be cut (its ports read and never answer, like a node
// whose link is down) and its zone's answers changed while a test runs.
type LAN struct {
	t      testing.TB
	Addrs  []string
	CAFile string

	mu       sync.Mutex
	redirect map[netip.AddrPort]netip.AddrPort
	live     map[netip.AddrPort]netip.AddrPort // the servers, kept while an address is cut
	holes    map[string]netip.AddrPort
	answers  []netip.Addr
}

// The stand-in LAN's zone, probe host and identity provider (where its proxy redirects).
const (
	LANZone = "apps.example.com"
	LANHost = "grafana.apps.example.com"
	LANIdP  = "https://login.example.com/auth"
)

// NewLAN stands the LAN in for addrs (default the seed's three), on 127.0.0.21 and up.
func NewLAN(tb testing.TB, addrs ...string) *LAN {
	tb.Helper()
	if len(addrs) == 0 {
		addrs = []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}
	}
	if len(addrs) > 200 {
		tb.Fatalf("NewLAN: %d addresses, at most 200 loopback stand-ins", len(addrs))
	}
	l := &LAN{t: tb, Addrs: addrs,
		redirect: map[netip.AddrPort]netip.AddrPort{}, live: map[netip.AddrPort]netip.AddrPort{}, holes: map[string]netip.AddrPort{}}
	for _, a := range l.Addrs {
		l.answers = append(l.answers, netip.MustParseAddr(a))
	}
	ca := NewCA(tb)
	l.CAFile = ca.WritePEM(tb)
	cert := ca.Issue(tb, time.Now().Add(90*24*time.Hour), "*."+LANZone, LANZone)
	for i, a := range l.Addrs {
		loop := netip.AddrFrom4([4]byte{127, 0, 0, byte(21 + i)}).String()
		node := netip.MustParseAddr(a)
		l.live[netip.AddrPortFrom(node, 53)] = StartDNS(tb, loop, dns.HandlerFunc(l.serveDNS))
		l.live[netip.AddrPortFrom(node, 443)] = StartHTTPS(tb, loop, HTTPSServer{Cert: cert, Handler: RedirectTo(http.StatusFound, LANIdP)})
		l.holes[a] = Blackhole(tb, loop)
	}
	maps.Copy(l.redirect, l.live)
	return l
}

// serveDNS answers as the seed's zone does, with the answers the test set.
func (l *LAN) serveDNS(w dns.ResponseWriter, r *dns.Msg) {
	l.mu.Lock()
	z := &Zone{Zone: LANZone + ".", Addrs: append([]netip.Addr(nil), l.answers...), TTL: 60,
		Outside: map[string][]netip.Addr{"example.org.": {netip.MustParseAddr("192.0.2.80")}}}
	l.mu.Unlock()
	z.ServeDNS(w, r)
}

// Redirect is the probe.Config.Redirect of the stand-in LAN.
func (l *LAN) Redirect(a netip.AddrPort) netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	if to, ok := l.redirect[a]; ok {
		return to
	}
	l.t.Errorf("the test dialled %s, which no stand-in serves", a)
	return a
}

// Cut makes addr's ports read and never answer; Restore brings its servers back.
func (l *LAN) Cut(addr string) { l.route(addr, true) }

func (l *LAN) Restore(addr string) { l.route(addr, false) }

func (l *LAN) route(addr string, cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	node := netip.MustParseAddr(addr)
	for _, port := range []uint16{53, 443} {
		ap := netip.AddrPortFrom(node, port)
		l.redirect[ap] = l.live[ap]
		if cut {
			l.redirect[ap] = l.holes[addr]
		}
	}
}

// SetAnswers changes what the zone answers for A (an address dropped from the template).
func (l *LAN) SetAnswers(addrs ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers = nil
	for _, a := range addrs {
		l.answers = append(l.answers, netip.MustParseAddr(a))
	}
}

// ProbeConfig aims the probes at the stand-ins; the system resolver knows nothing (LA402 then
// says there is no second path), so no test asks the machine's real resolver.
func (l *LAN) ProbeConfig(timeout time.Duration) probe.Config {
	return probe.Config{Timeout: timeout, CAFile: l.CAFile, Redirect: l.Redirect, Resolver: noResolver{}}
}

type noResolver struct{}

func (noResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("no such host (the tests' resolver knows nothing)")
}
