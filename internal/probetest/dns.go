package probetest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// StartDNS serves h over UDP and TCP on one free port of ip (a loopback address) until the test
// ends.
func StartDNS(t testing.TB, ip string, h dns.Handler) netip.AddrPort {
	t.Helper()
	pc, ln, ap := listenPair(t, ip)
	var started sync.WaitGroup
	started.Add(2)
	udp := &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: started.Done}
	tcp := &dns.Server{Listener: ln, Handler: h, NotifyStartedFunc: started.Done}
	for _, s := range []*dns.Server{udp, tcp} {
		go func() { _ = s.ActivateAndServe() }()
	}
	started.Wait()
	t.Cleanup(func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
	})
	return ap
}

// Zone answers like the seed's Corefile: `template IN A` for every name of Zone (apex
// included), `template ANY ANY { rcode NOERROR }` for other types, and a forwarder for names
// outside the zone that knows only Outside. The other fields inject one fault each.
type Zone struct {
	Zone  string // "apps.example.com."
	Addrs []netip.Addr
	TTL   uint32
	// Outside are names beyond the zone that the forwarder resolves; others are NXDOMAIN.
	Outside map[string][]netip.Addr

	// AAAA are answered for AAAA in the zone instead of NODATA (a public AAAA leaking in).
	AAAA []netip.Addr
	// OtherTypesRcode replaces NODATA for non-A types in the zone (NXDOMAIN or SERVFAIL when
	// the ANY template is missing).
	OtherTypesRcode int
	// Rcode, when not NOERROR, answers every question with it and nothing else.
	Rcode int
	// NotAuthoritative clears the AA flag on zone answers.
	NotAuthoritative bool
	// TruncateUDP answers over UDP with the TC bit and no records, as an answer too big for
	// the client's buffer would be.
	TruncateUDP bool
	// TCPAddrs, when set, are the A answers over TCP (a server whose transports disagree).
	TCPAddrs []netip.Addr
	// WrongID answers with another message ID.
	WrongID bool
	// SilentTCP reads questions over TCP and never answers (TCP filtered or hung, UDP fine).
	SilentTCP bool
	// Delay holds every answer back.
	Delay time.Duration
	// SilentOutside never answers names outside the zone: a forwarder waiting on an upstream
	// that does not answer (CoreDNS's forward plugin answers SERVFAIL only after its timeouts).
	SilentOutside bool
	// RefuseOutside answers REFUSED for names outside the zone: CoreDNS with the zone's block
	// alone and no '.' block.
	RefuseOutside bool
}

// ServeDNS implements dns.Handler.
func (z *Zone) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	if z.SilentTCP && strings.HasPrefix(w.RemoteAddr().Network(), "tcp") {
		return
	}
	if z.Delay > 0 {
		time.Sleep(z.Delay)
	}
	if z.SilentOutside && len(r.Question) == 1 && !dns.IsSubDomain(strings.ToLower(z.Zone), strings.ToLower(r.Question[0].Name)) {
		return
	}
	m := z.answer(r, w.RemoteAddr().Network())
	if z.WrongID {
		m.Id = r.Id + 1
	}
	_ = w.WriteMsg(m)
}

func (z *Zone) answer(r *dns.Msg, network string) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m
	}
	if z.Rcode != dns.RcodeSuccess {
		m.Rcode = z.Rcode
		return m
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	inZone := dns.IsSubDomain(strings.ToLower(z.Zone), name)
	if !inZone {
		if z.RefuseOutside {
			m.Rcode = dns.RcodeRefused
			return m
		}
		addrs, ok := z.Outside[name]
		if !ok {
			m.Rcode = dns.RcodeNameError
			return m
		}
		if q.Qtype == dns.TypeA {
			m.Answer = records(q.Name, dns.TypeA, 300, addrs)
		}
		return m
	}
	m.Authoritative = !z.NotAuthoritative
	if z.TruncateUDP && strings.HasPrefix(network, "udp") {
		m.Truncated = true
		return m
	}
	switch {
	case q.Qtype == dns.TypeA:
		addrs := z.Addrs
		if z.TCPAddrs != nil && strings.HasPrefix(network, "tcp") {
			addrs = z.TCPAddrs
		}
		m.Answer = records(q.Name, dns.TypeA, z.TTL, addrs)
	case q.Qtype == dns.TypeAAAA && len(z.AAAA) > 0:
		m.Answer = records(q.Name, dns.TypeAAAA, z.TTL, z.AAAA)
	case z.OtherTypesRcode != dns.RcodeSuccess:
		m.Rcode = z.OtherTypesRcode
		m.Authoritative = false
	}
	return m
}

func records(name string, qtype uint16, ttl uint32, addrs []netip.Addr) []dns.RR {
	out := make([]dns.RR, 0, len(addrs))
	hdr := dns.RR_Header{Name: name, Rrtype: qtype, Class: dns.ClassINET, Ttl: ttl}
	for _, a := range addrs {
		if qtype == dns.TypeA && a.Is4() {
			out = append(out, &dns.A{Hdr: hdr, A: net.IP(a.AsSlice())})
		}
		if qtype == dns.TypeAAAA && a.Is6() {
			out = append(out, &dns.AAAA{Hdr: hdr, AAAA: net.IP(a.AsSlice())})
		}
	}
	return out
}
