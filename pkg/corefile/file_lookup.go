package corefile

import (
	"errors"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// fileZone is a zone file the API shows, read for one origin as plugin/file/file.go Parse does
// (within the reader's caps): its records by lower-case owner name.
type fileZone struct {
	origin string
	names  map[string][]dns.RR
	soa    *dns.SOA
	// unread says why the records are not known ("" when they are).
	unread string
}

// readFileZone reads text for origin; a file that does not parse, is capped or has no SOA stays
// unread (CoreDNS refuses to start, or the model cannot tell: the start-up checks say which).
func readFileZone(files *Files, origin, name, text string) *fileZone {
	z := &fileZone{origin: origin, names: map[string][]dns.RR{}}
	err := eachZoneRecord(files, origin, name, text, func(rr dns.RR) {
		owner := strings.ToLower(rr.Header().Name)
		if !dns.IsSubDomain(origin, owner) {
			return // out-of-zone data: plugin/file/zone.go Insert refuses it
		}
		if s, ok := rr.(*dns.SOA); ok && z.soa == nil && owner == origin {
			z.soa = s
		}
		z.names[owner] = append(z.names[owner], rr)
	})
	switch {
	case errors.Is(err, ErrZoneUnread):
		z.unread = err.Error()
	case err != nil:
		z.unread = "the zone file does not parse: " + err.Error()
	case z.soa == nil:
		z.unread = "the zone file has no SOA record"
	}
	return z
}

// hasDescendant reports a name strictly below name (plugin/file/lookup.go hasDescendant).
func (z *fileZone) hasDescendant(name string) bool {
	for n := range z.names {
		if n != name && dns.IsSubDomain(name, n) {
			return true
		}
	}
	return false
}

func (z *fileZone) typed(owner string, qtype uint16, qname string) []dns.RR {
	var out []dns.RR
	for _, rr := range z.names[owner] {
		if rr.Header().Rrtype == qtype {
			c := dns.Copy(rr)
			c.Header().Name = qname
			out = append(out, c)
		}
	}
	return out
}

func (z *fileZone) has(owner string, t uint16) bool {
	return slices.ContainsFunc(z.names[owner], func(rr dns.RR) bool { return rr.Header().Rrtype == t })
}

// walk goes down from the origin to qname as Lookup's loop does: whether qname itself has
// records, the wildcard that covers the last name that does not exist, and why the answer is
// not modelled (a DNAME, a delegation).
func (z *fileZone) walk(qname string) (found bool, wildName, unknown string) {
	labels := dns.CountLabel(qname) - dns.CountLabel(z.origin)
	for i := 0; i <= labels; i++ {
		parts := qname
		if skip := labels - i; skip > 0 {
			off, _ := dns.NextLabel(qname, 0)
			for k := 1; k < skip; k++ {
				off, _ = dns.NextLabel(qname, off)
			}
			parts = qname[off:]
		}
		if _, found = z.names[parts]; !found {
			if off, end := dns.NextLabel(parts, 0); !end {
				wild := "*." + parts[off:]
				if _, ok := z.names[wild]; ok || z.hasDescendant(wild) {
					wildName = wild
				}
			}
			continue
		}
		if z.has(parts, dns.TypeDNAME) {
			return false, "", "the zone file has a DNAME: not modelled"
		}
		if parts != z.origin && z.has(parts, dns.TypeNS) {
			return false, "", "the zone file delegates " + parts + ": not modelled"
		}
	}
	return found, wildName, ""
}

// lookup answers an A or AAAA query for qname as plugin/file/lookup.go Lookup does without
// DNSSEC: the name's own records (NS of the apex in authority), NODATA with the SOA for a name
// that exists without the type, a wildcard `*.` of the closest encloser, else NXDOMAIN (NODATA
// for an empty non-terminal), a CNAME chased inside the zone (chase). DNAMEs, delegations, CNAME
// targets outside the file and a wildcard shadowed by an empty non-terminal are not modelled:
// unknown says so.
func (z *fileZone) lookup(qname string, qtype uint16, o *Outcome) (unknown string) {
	found, wildName, unknown := z.walk(qname)
	if unknown != "" {
		return unknown
	}
	o.Rcode, o.RecordsKnown, o.Authoritative = dns.RcodeSuccess, true, true
	soa := []dns.RR{dns.Copy(z.soa)}
	owner := qname
	switch {
	case found:
	case wildName != "":
		if z.hasDescendant(strings.TrimPrefix(wildName, "*.")) && z.closerENT(qname, wildName) {
			return "an empty non-terminal may shadow the zone file's wildcard: not modelled"
		}
		if _, ok := z.names[wildName]; !ok {
			o.Authority = soa
			return ""
		}
		owner = wildName
	default:
		if !z.hasDescendant(qname) {
			o.Rcode = dns.RcodeNameError
		}
		o.Authority = soa
		return ""
	}
	if cname := z.typed(owner, dns.TypeCNAME, qname); len(cname) > 0 {
		return z.chase(cname[0], qtype, o)
	}
	o.Records = z.typed(owner, qtype, qname)
	if len(o.Records) == 0 {
		o.Authority = soa
		return ""
	}
	o.Authority = z.typed(z.origin, dns.TypeNS, z.origin)
	return ""
}

// chase follows a CNAME inside the zone as plugin/file/lookup.go externalLookup does: the CNAME,
// each further CNAME of its target (at most 9), then the target's records of the type asked (none:
// the CNAMEs alone), with the apex NS in authority. A target that is not a name of the file
// (CoreDNS then asks its own server: z.Upstream) or below a delegation is not modelled.
func (z *fileZone) chase(cname dns.RR, qtype uint16, o *Outcome) string {
	rrs := []dns.RR{cname}
	target := strings.ToLower(cname.(*dns.CNAME).Target)
	for i := 0; ; i++ {
		if _, ok := z.names[target]; !ok {
			return "the CNAME's target " + target + " is not a name of the zone file: CoreDNS resolves it through its own server, which is not modelled"
		}
		if _, _, unknown := z.walk(target); unknown != "" {
			return unknown
		}
		next := z.typed(target, dns.TypeCNAME, target)
		if len(next) == 0 {
			rrs = append(rrs, z.typed(target, qtype, target)...)
			break
		}
		rrs = append(rrs, next...)
		target = strings.ToLower(next[0].(*dns.CNAME).Target)
		if i+1 > 8 {
			break
		}
	}
	o.Records = rrs
	o.Authority = z.typed(z.origin, dns.TypeNS, z.origin)
	return ""
}

// closerENT reports a name between the wildcard's parent and qname with descendants (an empty
// non-terminal closer than the wildcard: plugin/file/lookup.go closerENTExists).
func (z *fileZone) closerENT(qname, wildName string) bool {
	parent := strings.TrimPrefix(wildName, "*.")
	for off, end := dns.NextLabel(qname, 0); !end; off, end = dns.NextLabel(qname, off) {
		n := qname[off:]
		if n == parent {
			return false
		}
		if z.hasDescendant(n) {
			return true
		}
	}
	return false
}
