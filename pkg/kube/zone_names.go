package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// AskedNames are the names of the zone workstations really ask: the probe host and the hosts
// of the proxy's routes in the zone (lower case, fully qualified, each once, probe host first).
func (s *Setup) AskedNames() []string {
	var out []string
	add := func(h string) {
		h = dns.Fqdn(strings.ToLower(strings.TrimSpace(h)))
		if h == "." || strings.Contains(h, "*") || !s.Zone.Contains(h) || slices.Contains(out, h) {
			return
		}
		out = append(out, h)
	}
	add(s.ProbeHost.Name)
	for _, r := range s.Routes {
		for _, h := range r.Hosts {
			add(h)
		}
	}
	return out
}

// answersByName reads the zone's A and AAAA answers name by name, where no one template answers
// the whole zone (a `match` regex, `hosts` entries, a constant template): CoreDNS answers each
// name asked (corefile.Query), and the addresses of the names workstations ask are the zone's
// set when they all agree. A name that gets no address (NODATA, SERVFAIL) is sent nowhere: LA104
// judges it. The set stays unknown when one of those names is not predicted, when they get
// different addresses (named in Why), or when none gets an address.
func (s *Setup) answersByName(cf *corefile.Corefile, z *ZoneAnswers) {
	names := s.AskedNames()
	if len(names) == 0 {
		return
	}
	a, by, aOK, why := agreeingAnswers(cf, names, dns.TypeA, z.Port)
	if !aOK {
		if why != "" {
			z.Why += "; name by name, " + why
		}
		return
	}
	aaaa, _, aaaaOK, _ := agreeingAnswers(cf, names, dns.TypeAAAA, z.Port)
	if !aaaaOK {
		aaaa = nil
	}
	z.Answers, z.AAAAAnswers, z.Known, z.Why = a, aaaa, true, ""
	z.Name, z.ByName, z.By = names[0], names, by
}

// agreeingAnswers asks every name for qtype: the answers of the names that get addresses, when
// they all get the same ones; when CoreDNS itself answers each without an address (NODATA,
// SERVFAIL: a hosts wildcard an older CoreDNS reads literally), the set is known and empty. why
// says otherwise (a name forwarded, not predicted, or names that get different addresses).
func agreeingAnswers(cf *corefile.Corefile, names []string, qtype uint16, port string) ([]corefile.Answer, *corefile.Plugin, bool, string) {
	var (
		ref     []netip.Addr
		refName string
		out     []corefile.Answer
		by      *corefile.Plugin
	)
	for _, n := range names {
		o := cf.Query(corefile.Question{Name: n, Type: qtype, Port: port})
		if by == nil {
			by = o.By
		}
		if !o.Known() {
			return nil, nil, false, fmt.Sprintf("what CoreDNS answers to %s for %s is not known: %s", dns.TypeToString[qtype], n, o.Unknown)
		}
		if o.Forwarded || o.Rcode == -1 {
			return nil, nil, false, fmt.Sprintf("%s of %s is %s", dns.TypeToString[qtype], n, o.Describe())
		}
		addrs := o.Addrs()
		if len(addrs) == 0 {
			continue
		}
		if refName == "" {
			ref, refName = addrs, n
			out = recordAnswers(o, qtype)
			continue
		}
		if !slices.Equal(addrs, ref) {
			return nil, nil, false, fmt.Sprintf("the names of the zone get different addresses: %s %s, %s %s", strings.TrimSuffix(refName, "."), addrText(ref), strings.TrimSuffix(n, "."), addrText(addrs))
		}
	}
	// every name answered here, none with an address: the zone's set is empty
	return out, by, true, ""
}

// recordAnswers are an outcome's address records as answers written where its plugin is.
func recordAnswers(o corefile.Outcome, qtype uint16) []corefile.Answer {
	var out []corefile.Answer
	for _, rr := range o.Records {
		if rr.Header().Rrtype != qtype {
			continue
		}
		a := corefile.Answer{Static: true, OwnerIsQueryName: true, TTL: rr.Header().Ttl, Type: dns.TypeToString[qtype], Record: rr.String()}
		switch r := rr.(type) {
		case *dns.A:
			a.Addr, _ = netip.AddrFromSlice(r.A.To4())
		case *dns.AAAA:
			a.Addr, _ = netip.AddrFromSlice(r.AAAA.To16())
		}
		a.Data = a.Addr.String()
		if o.By != nil {
			a.Line = o.By.Line
		}
		out = append(out, a)
	}
	return out
}

func addrText(addrs []netip.Addr) string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return strings.Join(out, ", ")
}
