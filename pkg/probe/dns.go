package probe

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/miekg/dns"
)

// DNS asks one question of one server over one transport ("udp" or "tcp").
type DNS interface {
	Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*DNSReply, error)
}

// DNSReply is a server's answer with what a diagnosis needs beside the records.
type DNSReply struct {
	Server netip.AddrPort
	// Network is the transport that carried the answer: "tcp" also when a UDP answer came back
	// truncated and the question was asked again over TCP.
	Network string
	// Truncated says the UDP answer had the TC bit and was replaced by the TCP answer.
	Truncated bool
	// Attempts counts UDP sends: 2 means the first got no answer within half the deadline.
	Attempts int
	// MismatchedIDs counts replies ignored because their message ID or question did not match.
	MismatchedIDs int
	RTT           time.Duration
	Msg           *dns.Msg
}

// Rcode is the response code (NOERROR, NXDOMAIN, SERVFAIL...), extended bits included.
func (r *DNSReply) Rcode() int { return r.Msg.Rcode }

// RcodeName is the response code as dig prints it.
func (r *DNSReply) RcodeName() string {
	if s, ok := dns.RcodeToString[r.Msg.Rcode]; ok {
		return s
	}
	return "RCODE" + strconv.Itoa(r.Msg.Rcode)
}

// Authoritative is the AA flag: the server answered from a zone it serves, not from a cache or
// a forwarder.
func (r *DNSReply) Authoritative() bool { return r.Msg.Authoritative }

// RecursionAvailable is the RA flag.
func (r *DNSReply) RecursionAvailable() bool { return r.Msg.RecursionAvailable }

// Addrs returns the A and AAAA addresses of the answer section, sorted and without duplicates,
// so answers compare as sets whatever order the server shuffled them into.
func (r *DNSReply) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, rr := range r.Msg.Answer {
		switch v := rr.(type) {
		case *dns.A:
			if a, ok := netip.AddrFromSlice(v.A.To4()); ok {
				out = append(out, a)
			}
		case *dns.AAAA:
			if a, ok := netip.AddrFromSlice(v.AAAA.To16()); ok {
				out = append(out, a)
			}
		}
	}
	return SortAddrs(out)
}

// AnswersOfType counts answer records of qtype (a CNAME alone is not an answer to A).
func (r *DNSReply) AnswersOfType(qtype uint16) int {
	n := 0
	for _, rr := range r.Msg.Answer {
		if rr.Header().Rrtype == qtype {
			n++
		}
	}
	return n
}

// MinTTL is the smallest TTL in the answer section (what a cache honours), false when empty.
func (r *DNSReply) MinTTL() (uint32, bool) {
	if len(r.Msg.Answer) == 0 {
		return 0, false
	}
	ttls := make([]uint32, 0, len(r.Msg.Answer))
	for _, rr := range r.Msg.Answer {
		ttls = append(ttls, rr.Header().Ttl)
	}
	return slices.Min(ttls), true
}

// NoData is NOERROR without a record of the asked type: the name exists, the type does not.
func (r *DNSReply) NoData(qtype uint16) bool {
	return r.Msg.Rcode == dns.RcodeSuccess && r.AnswersOfType(qtype) == 0
}

// NXDomain is "this name does not exist", for every type: caches may apply it to the whole name.
func (r *DNSReply) NXDomain() bool { return r.Msg.Rcode == dns.RcodeNameError }

// TypeName is a query type as dig prints it.
func TypeName(qtype uint16) string {
	if s, ok := dns.TypeToString[qtype]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(qtype))
}
