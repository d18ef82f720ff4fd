package corefile

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"

	"github.com/coredns/caddy/caddyfile"
	"github.com/miekg/dns"
)

// Template is one `template CLASS TYPE [ZONES...] { ... }` entry, read as CoreDNS v1.14.7's
// plugin/template/setup.go templateParse reads it.
type Template struct {
	// File and Line say where the entry is written ("" File: the Corefile itself).
	File string
	Line int
	// EndLine is the line of the entry's last token (its closing brace).
	EndLine int
	Class   string // as written: IN, ANY, CH...
	Type    string // as written: A, AAAA, ANY...
	// Zones the entry answers for: its own arguments, else the server block's zones
	// (plugin.OriginsFromArgsOrServerBlock; arguments that are not domain names are dropped
	// silently, as CoreDNS does).
	Zones         []string
	ExplicitZones bool
	Answers       []Answer
	Additional    []Answer
	Authority     []Answer
	Rcode         string // "" when not set (CoreDNS then answers NOERROR)
	Match         []string
	// Fallthrough is set by `fallthrough [ZONES]`; FallZones are its zones ("." when none).
	// It only matters when a `match` expression does not match the name: a name that does
	// not match any expression gets SERVFAIL unless it falls through (template.go match).
	Fallthrough bool
	FallZones   []string
	// Valid is false when CoreDNS refuses the entry (Corefile.Problems says why).
	Valid bool

	qclass, qtype uint16
	rcode         int
	regex         []*regexp.Regexp
}

// maxRegexpLen is CoreDNS's own limit before compiling a match expression.
const maxRegexpLen = 10000

// parseTemplates reads every template entry of a block with one dispenser over the directive's
// tokens, as templateParse does; the first error stops CoreDNS and is returned with the
// entries read so far (the model keeps them to explain the rest of the block).
func parseTemplates(d *caddyfile.Dispenser, blockZones []string, warn func(file string, line int, msg string)) ([]Template, error) {
	var out []Template
	for d.Next() {
		t := Template{File: tokenFile(d), Line: d.Line()}
		if !d.NextArg() {
			return out, d.ArgErr()
		}
		t.Class = d.Val()
		class, ok := dns.StringToClass[t.Class]
		if !ok {
			return out, d.Errf("invalid query class %s", t.Class)
		}
		if !d.NextArg() {
			return out, d.ArgErr()
		}
		t.Type = d.Val()
		qtype, ok := dns.StringToType[t.Type]
		if !ok {
			return out, d.Errf("invalid RR class %s", t.Type)
		}
		t.qclass, t.qtype = class, qtype
		args := d.RemainingArgs()
		t.ExplicitZones = len(args) > 0
		t.Zones = originsFromArgsOrBlock(args, blockZones, func(arg string) {
			warn(t.File, t.Line, fmt.Sprintf("template zone %q is not a domain name: CoreDNS drops it silently", arg))
		})
		for d.NextBlock() {
			if err := t.property(d); err != nil {
				out = append(out, t)
				return out, err
			}
		}
		if len(t.regex) == 0 {
			t.regex = append(t.regex, regexp.MustCompile(".*"))
		}
		t.Valid = true
		out = append(out, t)
	}
	return out, nil
}

func (t *Template) property(d *caddyfile.Dispenser) error {
	switch d.Val() {
	case "match":
		args := d.RemainingArgs()
		if len(args) == 0 {
			return d.ArgErr()
		}
		for _, expr := range args {
			if len(expr) > maxRegexpLen {
				return d.Errf("regex pattern too long: %d > %d", len(expr), maxRegexpLen)
			}
			r, err := regexp.Compile(expr)
			if err != nil {
				return d.Errf("could not parse regex: %s, %v", expr, err)
			}
			t.Match = append(t.Match, expr)
			t.regex = append(t.regex, r)
		}
	case "answer", "additional", "authority":
		section := d.Val()
		args := d.RemainingArgs()
		if len(args) == 0 {
			return d.ArgErr()
		}
		for _, text := range args {
			a, err := compileAnswer(text, d.Line())
			if err != nil {
				return d.Errf("could not compile template: %s, %v", d.Val(), err)
			}
			switch section {
			case "answer":
				t.Answers = append(t.Answers, a)
			case "additional":
				t.Additional = append(t.Additional, a)
			default:
				t.Authority = append(t.Authority, a)
			}
		}
	case "rcode":
		if !d.NextArg() {
			return d.ArgErr()
		}
		rcode, ok := dns.StringToRcode[d.Val()]
		if !ok {
			return d.Errf("unknown rcode %s", d.Val())
		}
		t.Rcode, t.rcode = d.Val(), rcode
	case "ederror":
		args := d.RemainingArgs()
		if len(args) != 1 && len(args) != 2 {
			return d.ArgErr()
		}
		if _, err := strconv.ParseUint(args[0], 10, 16); err != nil {
			return d.Errf("error parsing extended DNS error code %s, %v\n", d.Val(), err)
		}
	case "fallthrough":
		t.Fallthrough = true
		t.FallZones = fallZones(d.RemainingArgs())
	case "upstream":
		d.RemainingArgs()
	default:
		return d.ArgErr()
	}
	return nil
}

// fallZones is fall.F SetZonesFromArgs: "." when no zone is given.
func fallZones(args []string) []string {
	if len(args) == 0 {
		return []string{"."}
	}
	var out []string
	for _, a := range args {
		out = append(out, normalizeExact(a)...)
	}
	return out
}

// originsFromArgsOrBlock is plugin.OriginsFromArgsOrServerBlock: the arguments as zones
// (those that do not normalise are dropped silently), else the block's zones.
func originsFromArgsOrBlock(args, blockZones []string, dropped func(string)) []string {
	if len(args) == 0 {
		return append([]string(nil), blockZones...)
	}
	out := []string{}
	for _, a := range args {
		z := normalizeExact(a)
		if len(z) == 0 && dropped != nil {
			dropped(a)
		}
		out = append(out, z...)
	}
	return out
}

// normalizeExact is plugin.Host.NormalizeExact: transport and port removed, every zone the
// name stands for (a CIDR gives its reverse zones), nothing when it is not a domain name.
func normalizeExact(s string) []string {
	_, rest := splitTransport(s)
	hosts, _, err := splitHostPort(rest)
	if err != nil {
		return nil
	}
	for i := range hosts {
		hosts[i] = canonicalZone(hosts[i])
	}
	return hosts
}

// tokenFile is the pod path of the dispenser's current token ("" for the Corefile itself:
// the dispensers of this package are given "" as their file name).
func tokenFile(d *caddyfile.Dispenser) string { return d.File() }

// Matches reports whether the entry is tried for a query of this class and type (CoreDNS
// also matches a query whose class or type is ANY).
func (t Template) Matches(class, qtype string) bool {
	return (t.Class == "ANY" || t.Class == class) && (t.Type == "ANY" || t.Type == qtype)
}

// CatchAll reports whether the entry is `template ANY ANY`.
func (t Template) CatchAll() bool { return t.Class == "ANY" && t.Type == "ANY" }

// NoData reports whether the entry answers NOERROR with no record for every name it sees:
// what `template ANY ANY { rcode NOERROR }` is for. (fallthrough does not change it: it only
// applies to names a `match` expression does not match.)
func (t Template) NoData() bool {
	return len(t.Answers) == 0 && (t.Rcode == "" || t.Rcode == "NOERROR") && len(t.Match) == 0
}

// Addrs returns the addresses of the entry's static A and AAAA answers, in order.
func (t Template) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, a := range t.Answers {
		if a.Addr.IsValid() {
			out = append(out, a.Addr)
		}
	}
	return out
}

// Label is how findings name the entry.
func (t Template) Label() string {
	if t.File != "" {
		return fmt.Sprintf("template %s %s (%s line %d)", t.Class, t.Type, t.File, t.Line)
	}
	return fmt.Sprintf("template %s %s (line %d)", t.Class, t.Type, t.Line)
}
