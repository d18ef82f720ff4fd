package corefile

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// Question is one query a client sends to CoreDNS.
type Question struct {
	// Name is the name asked (any case, with or without the final dot).
	Name string
	Type uint16
	// Port is the server port the query arrives on, as written in the Corefile ("53").
	Port string
	// Source is the query's source address as CoreDNS sees it (after kube-proxy's DNAT and
	// any masquerade); invalid when not known: plugins that decide by it (acl) then let the
	// query go on and the outcome says so (Outcome.ACL).
	Source netip.Addr
}

// Outcome is what CoreDNS does with a question, as far as the configuration shows.
type Outcome struct {
	Question Question
	// Block is the server block that takes the query (nil when none does: REFUSED).
	Block *ServerBlock
	// By is the plugin that answers, or forwards (nil when no plugin of the block answers).
	By *Plugin
	// Rcode is the response code (dns.RcodeSuccess...); -1 when it is not known (the answer
	// of an upstream, or of a plugin this model does not evaluate).
	Rcode int
	// Records are the answer section, Authority the authority section, when RecordsKnown.
	Records      []dns.RR
	Authority    []dns.RR
	RecordsKnown bool
	// Authoritative is the AA flag of the answer.
	Authoritative bool
	// Forwarded is true when the forward plugin sends the query to Upstreams: the answer is
	// theirs (SERVFAIL when none answers in time).
	Forwarded bool
	Upstreams []string
	// Unknown says why part of the outcome cannot be predicted ("" when all of it can).
	Unknown string
	// ACL is the block's acl when the question had no source: the outcome is the answer of
	// the clients it lets through, and it decides who gets it.
	ACL *ACL
	// Dropped: the acl drops the query (no answer at all; the client times out).
	Dropped bool
	// View is the view of the block that answered a question without a source ("lan (line
	// 2)"): the outcome is the answer of the clients it admits; others may get another block's.
	View string
}

// NoData reports a predicted NOERROR answer with no record.
func (o Outcome) NoData() bool {
	return o.Rcode == dns.RcodeSuccess && o.RecordsKnown && len(o.Records) == 0 && !o.Forwarded
}

// Known reports whether the whole outcome is predicted.
func (o Outcome) Known() bool { return o.Unknown == "" }

// Addrs are the addresses of the A and AAAA records answered, sorted, each once.
func (o Outcome) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, rr := range o.Records {
		if a := rrAddr(rr); a.IsValid() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// Describe says in a few words what happens: "answers 10.0.10.11, 10.0.10.12 (template at line
// 4)", "NODATA", "forwarded to /etc/resolv.conf", "SERVFAIL", "REFUSED".
func (o Outcome) Describe() string {
	var s string
	switch {
	case o.Forwarded:
		s = "forwarded to " + strings.Join(o.Upstreams, " ")
	case o.Rcode == -1:
		s = "answered by a source the configuration does not show"
	case o.Rcode != dns.RcodeSuccess:
		s = dns.RcodeToString[o.Rcode]
	case !o.RecordsKnown:
		s = "answered"
	case len(o.Records) == 0:
		s = "NODATA (NOERROR, no record)"
	default:
		var recs []string
		for _, rr := range o.Records {
			if a := rrAddr(rr); a.IsValid() {
				recs = append(recs, a.String())
			} else {
				recs = append(recs, strings.Join(strings.Fields(rr.String()), " "))
			}
		}
		s = "answers " + strings.Join(recs, ", ")
	}
	if o.By != nil {
		s += fmt.Sprintf(" (%s at %s)", o.By.Name, o.By.Where())
	}
	if o.Unknown != "" {
		s += "; " + o.Unknown
	}
	return s
}

// passThrough are the plugins that let an IN A or AAAA query for an ordinary name go on to the
// next plugin unchanged (they log, measure, cache, set flags, or only act on other classes,
// types or names: chaos on CH, any on ANY, local on localhost, transfer on AXFR).
var passThrough = map[string]bool{
	"root": true, "metadata": true, "geoip": true, "cancel": true, "proxyproto": true, "quic": true,
	"grpc_server": true, "https": true, "https3": true, "timeouts": true, "multisocket": true,
	"reload": true, "nsid": true, "bufsize": true, "bind": true, "debug": true, "trace": true,
	"ready": true, "health": true, "pprof": true, "shed": true, "prometheus": true, "errors": true,
	"log": true, "dnstap": true, "local": true, "any": true, "chaos": true, "loadbalance": true,
	"cache": true, "header": true, "dnssec": true, "tls": true, "minimal": true, "transfer": true,
	"loop": true, "on": true, "view": true,
}

// Query predicts what CoreDNS does with q: the server block for the name on the port (the
// longest zone that is a suffix of the name, else "."; none: REFUSED; core/dnsserver/server.go
// ServeDNS), then the block's plugins in plugin.cfg order until one answers; none: SERVFAIL
// (plugin.NextOrFailure).
func (c *Corefile) Query(q Question) (o Outcome) {
	o = Outcome{Question: q, Rcode: -1}
	name := strings.ToLower(dns.Fqdn(q.Name))
	var unknown []string
	if !c.Starts() {
		unknown = append(unknown, "CoreDNS does not start with this configuration")
	}
	unknown = append(unknown, c.Incomplete...)
	defer func() {
		if o.Unknown != "" {
			unknown = append(unknown, o.Unknown)
		}
		o.Unknown = strings.Join(unknown, "; ")
	}()
	b, ambiguous := c.blockFor(name, q.Port, q.Source, &o)
	if ambiguous != "" {
		o.Unknown = ambiguous
		return o
	}
	if b == nil || len(b.Plugins) == 0 {
		o.Rcode, o.RecordsKnown = dns.RcodeRefused, true
		return o
	}
	o.Block = b
	if len(b.Listen) > 0 {
		unknown = append(unknown, "the block listens only on "+strings.Join(b.Listen, ", ")+" (bind)")
	}
	for _, p := range b.chain() {
		if passThrough[p.Name] {
			continue
		}
		var done bool
		switch p.Name {
		case "template":
			done = b.serveTemplate(name, q.Type, &o)
		case "hosts":
			done = b.serveHosts(name, q.Type, &o)
		case "forward":
			done = b.serveForward(name, &o)
		case "kubernetes", "file":
			done = b.serveZonePlugin(p.Name, name, q.Type, &o)
		case "acl":
			done = b.serveACL(name, q, &o)
		case "rewrite":
			done = !b.rewriteLeaves(name, q.Type, &o)
		case "whoami":
			// plugin/whoami: authoritative, the client's address in the additional section
			o.Rcode, o.RecordsKnown, o.Authoritative = dns.RcodeSuccess, true, true
			done = true
		default:
			o.Unknown = fmt.Sprintf("the %s plugin may answer: this model does not evaluate it", p.Name)
			done = true
		}
		if done {
			if o.By == nil {
				o.By = &p
			}
			b.capTTL(name, &o)
			return o
		}
	}
	o.Rcode, o.RecordsKnown = dns.RcodeServerFailure, true
	return o
}

// blockFor finds the block serving name on port (dns transport), chosen by view among the
// blocks of one zone (pickByView).
func (c *Corefile) blockFor(name, port string, src netip.Addr, o *Outcome) (*ServerBlock, string) {
	zones := map[string][]*ServerBlock{}
	for i := range c.Blocks {
		b := &c.Blocks[i]
		for _, a := range b.Addresses {
			if a.Transport == "dns" && a.Port == port && !slices.Contains(zones[a.Zone], b) {
				zones[a.Zone] = append(zones[a.Zone], b)
			}
		}
	}
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		if bs, ok := zones[name[off:]]; ok {
			return pickByView(bs, src, o)
		}
	}
	if bs, ok := zones["."]; ok {
		return pickByView(bs, src, o)
	}
	return nil, ""
}

// chain is the block's plugins, each once, in plugin.cfg order.
func (b *ServerBlock) chain() []Plugin {
	var out []Plugin
	for _, p := range b.Plugins {
		if !slices.ContainsFunc(out, func(x Plugin) bool { return x.Name == p.Name }) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return directiveRank(out[i].Name) < directiveRank(out[j].Name) })
	return out
}

// matchZone is plugin.Zones.Matches: the longest zone name is a subdomain of.
func matchZone(zones []string, name string) string {
	best := ""
	for _, z := range zones {
		if dns.IsSubDomain(z, name) && len(z) > len(best) {
			best = z
		}
	}
	return best
}

// serveTemplate is plugin/template/template.go ServeDNS: a name outside every entry's zones
// goes on; entries are tried in order; an entry of another class or type, or another zone, is
// skipped; a name no `match` expression matches gets SERVFAIL unless the entry falls through
// for it; the first matching entry answers with its rcode and records, and a record that does
// not parse (dns.NewRR) makes it SERVFAIL.
func (b *ServerBlock) serveTemplate(name string, qtype uint16, o *Outcome) bool {
	var all []string
	for _, t := range b.Templates {
		all = append(all, t.Zones...)
	}
	if matchZone(all, name) == "" {
		return false
	}
	for i := range b.Templates {
		t := &b.Templates[i]
		zone := matchZone(t.Zones, name)
		if zone == "" || (t.qclass != dns.ClassANY && t.qclass != dns.ClassINET) || (t.qtype != dns.TypeANY && qtype != dns.TypeANY && t.qtype != qtype) {
			continue
		}
		data, matched := t.matchName(name, zone, qtype)
		o.By = t.plugin()
		if !matched {
			if t.Fallthrough && matchZone(t.FallZones, name) != "" {
				continue
			}
			o.Rcode, o.RecordsKnown = dns.RcodeServerFailure, true
			return true
		}
		if t.rcode == dns.RcodeServerFailure {
			o.Rcode, o.RecordsKnown = dns.RcodeServerFailure, true
			return true
		}
		t.answer(data, o)
		return true
	}
	o.By = nil
	return false
}

// answer builds the entry's records for data as executeRRTemplate does (answers, additional,
// authority, in that order): a record that does not parse makes the query SERVFAIL.
func (t *Template) answer(data tmplData, o *Outcome) {
	o.Rcode, o.RecordsKnown, o.Authoritative = t.rcode, true, true
	for si, sec := range [][]Answer{t.Answers, t.Additional, t.Authority} {
		for j := range sec {
			text, ok := sec[j].render(data)
			if !ok {
				o.Rcode, o.RecordsKnown, o.Records, o.Authority, o.Authoritative = -1, false, nil, nil, false
				o.Unknown = fmt.Sprintf("the answer at line %d depends on more than the name asked: not evaluated", sec[j].Line)
				return
			}
			rr, unread, err := readAnswer(text)
			if unread != "" {
				o.Rcode, o.RecordsKnown, o.Records, o.Authority, o.Authoritative = -1, false, nil, nil, false
				o.Unknown = fmt.Sprintf("the answer at line %d is not read: %s", sec[j].Line, unread)
				return
			}
			if err != nil || rr == nil {
				o.Rcode, o.Records, o.Authority, o.Authoritative = dns.RcodeServerFailure, nil, nil, false
				return
			}
			switch si {
			case 0:
				o.Records = append(o.Records, rr)
			case 2:
				o.Authority = append(o.Authority, rr)
			}
		}
	}
}

// plugin names a template entry as a Plugin for outcomes.
func (t *Template) plugin() *Plugin {
	return &Plugin{Name: "template", File: t.File, Line: t.Line, Args: []string{t.Class, t.Type}}
}

// matchName runs the entry's match expressions on the lower-case name, as template.go match.
func (t *Template) matchName(name, zone string, qtype uint16) (tmplData, bool) {
	for _, re := range t.regex {
		if !re.MatchString(name) {
			continue
		}
		d := tmplData{Name: name, Zone: zone, Regex: re.String(), Class: "IN", Type: dns.TypeToString[qtype], Group: map[string]string{}}
		m := re.FindStringSubmatch(name)
		d.Match = m
		names := re.SubexpNames()
		for i, s := range m {
			d.Group[strconv.Itoa(i)] = s
		}
		for i, s := range m {
			if names[i] != "" {
				d.Group[names[i]] = s
			}
		}
		return d, true
	}
	return tmplData{}, false
}

// serveHosts is plugin/hosts/hosts.go ServeDNS for A and AAAA: a name outside the plugin's
// zones goes on; a name with addresses of the type asked is answered; a name with addresses of
// the other family only gets NODATA; a name the file does not hold falls through when allowed,
// else SERVFAIL.
func (b *ServerBlock) serveHosts(name string, qtype uint16, o *Outcome) bool {
	h := b.hosts
	if h == nil || matchZone(h.origins, name) == "" || (qtype != dns.TypeA && qtype != dns.TypeAAAA) {
		return false
	}
	o.By = &h.plugin
	if !h.known {
		o.Unknown = fmt.Sprintf("the hosts plugin reads %s, which the API does not show", h.path)
		return true
	}
	addrs, unknown := h.lookup(name)
	if unknown != "" {
		o.Unknown = unknown
		return true
	}
	if len(addrs) == 0 {
		if h.fall != nil && matchZone(h.fall, name) != "" {
			o.By = nil
			return false
		}
		o.Rcode, o.RecordsKnown = dns.RcodeServerFailure, true
		return true
	}
	o.Rcode, o.RecordsKnown, o.Authoritative = dns.RcodeSuccess, true, true
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			continue
		}
		switch {
		case qtype == dns.TypeA && ip.Unmap().Is4():
			o.Records = append(o.Records, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: h.ttl}, A: ip.Unmap().AsSlice()})
		case qtype == dns.TypeAAAA && !ip.Unmap().Is4():
			o.Records = append(o.Records, &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: h.ttl}, AAAA: ip.AsSlice()})
		}
	}
	return true
}

// lookup is hostsfile.go lookupStaticHostLocked: the name's own entries, else (v1.14.5 and
// later) those of `*.` and the name without its first label. unknown says why a wildcard entry
// that could match cannot be read (a build of unknown version). The file's and the inline
// entries are merged here; CoreDNS looks each up apart and concatenates them.
func (h *hostsConf) lookup(name string) (addrs []string, unknown string) {
	if a := h.names[name]; len(a) > 0 {
		return a, ""
	}
	i, end := dns.NextLabel(name, 0)
	if end {
		return nil, ""
	}
	a := h.names["*."+name[i:]]
	switch {
	case len(a) == 0 || h.wild == "literal":
		return nil, ""
	case h.wild != "":
		return nil, h.wild
	}
	return a, ""
}

// serveForward is plugin/forward/forward.go ServeDNS's match: the first stanza whose FROM
// zone holds the name (and whose `except` does not) sends the query upstream.
func (b *ServerBlock) serveForward(name string, o *Outcome) bool {
	for i := range b.forwards {
		f := &b.forwards[i]
		if !dns.IsSubDomain(f.from, name) {
			continue
		}
		if !strings.EqualFold(dns.Fqdn(name), f.from) && matchZone(f.except, name) != "" {
			continue
		}
		o.By = &f.plugin
		o.Forwarded, o.Upstreams = true, f.to
		return true
	}
	return false
}

// serveZonePlugin: the kubernetes plugin answers every name of its zones from data the
// configuration does not hold (the cluster's Services); the file plugin from its zone file,
// read when it is a key of a ConfigMap the pods mount (fileZone.lookup). With `fallthrough`
// for the name, a name they do not have goes on to the next plugin (plugin/file/file.go
// ServeDNS: no answer, NXDOMAIN or an empty non-terminal).
func (b *ServerBlock) serveZonePlugin(plugin, name string, qtype uint16, o *Outcome) bool {
	for i := range b.zonePlugins {
		zp := &b.zonePlugins[i]
		zone := matchZone(zp.zones, name)
		if zp.plugin.Name != plugin || zone == "" {
			continue
		}
		o.By = &zp.plugin
		if fz := zp.files[zone]; fz != nil && fz.unread == "" && (qtype == dns.TypeA || qtype == dns.TypeAAAA) {
			if unknown := fz.lookup(name, qtype, o); unknown != "" {
				o.Rcode, o.RecordsKnown, o.Records, o.Authority, o.Authoritative = -1, false, nil, nil, false
				o.Unknown = unknown
				return true
			}
			if len(o.Records) == 0 && zp.fall != nil && matchZone(zp.fall, name) != "" && (o.Rcode == dns.RcodeNameError || len(fz.names[name]) == 0 && fz.hasDescendant(name)) {
				o.Rcode, o.RecordsKnown, o.Authority, o.Authoritative, o.By = -1, false, nil, false, nil
				return false
			}
			return true
		}
		o.Unknown = fmt.Sprintf("the %s plugin answers from data the configuration does not show", plugin)
		if zp.fall != nil && matchZone(zp.fall, name) != "" {
			o.Unknown += ", and falls through to the next plugins for names it does not have"
		}
		return true
	}
	return false
}

// capTTL applies the cache plugin of the block to the answer's TTLs (plugin/cache/cache.go
// WriteMsg: every record gets the message's lowest TTL, at least 5s and at most the cap).
func (b *ServerBlock) capTTL(name string, o *Outcome) {
	if !b.Has("cache") || len(o.Records)+len(o.Authority) == 0 || o.Rcode != dns.RcodeSuccess || matchZone(b.cacheZones, name) == "" {
		return
	}
	all := append(append([]dns.RR{}, o.Records...), o.Authority...)
	ttl := b.cacheCap
	for _, rr := range all {
		ttl = min(ttl, rr.Header().Ttl)
	}
	ttl = min(max(ttl, 5), b.cacheCap)
	for _, rr := range all {
		rr.Header().Ttl = ttl
	}
}
