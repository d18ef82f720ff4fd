package corefile

import (
	"fmt"
	"net/netip"
	"regexp"

	"github.com/miekg/dns"
)

// Template is one `template CLASS TYPE [ZONES...] { ... }` entry.
type Template struct {
	Line  int
	Class string // as written: IN, ANY, CH...
	Type  string // as written: A, AAAA, ANY...
	// Zones the entry answers for: its own arguments, else the server block's zones.
	Zones         []string
	ExplicitZones bool
	Answers       []Answer
	Additional    []Answer
	Authority     []Answer
	Rcode         string // "" when not set (CoreDNS then answers NOERROR)
	Match         []string
	Fallthrough   bool
}

// maxRegexpLen mirrors CoreDNS's own limit before compiling a match expression.
const maxRegexpLen = 10000

func parseTemplate(p Plugin, blockZones []string) (Template, []Problem) {
	t := Template{Line: p.Line}
	var problems []Problem
	bad := func(line int, format string, a ...any) {
		problems = append(problems, Problem{Line: line, Message: "template: " + fmt.Sprintf(format, a...)})
	}
	if len(p.Args) < 2 {
		bad(p.Line, "expects a class and a type, e.g. `template IN A`")
	}
	if len(p.Args) > 0 {
		t.Class = p.Args[0]
		if _, ok := dns.StringToClass[t.Class]; !ok {
			bad(p.Line, "invalid query class %q (CoreDNS expects upper case: IN, ANY, CH)", t.Class)
		}
	}
	if len(p.Args) > 1 {
		t.Type = p.Args[1]
		if _, ok := dns.StringToType[t.Type]; !ok {
			bad(p.Line, "invalid query type %q (CoreDNS expects upper case: A, AAAA, ANY)", t.Type)
		}
	}
	if len(p.Args) > 2 {
		t.ExplicitZones = true
		for _, z := range p.Args[2:] {
			a, err := ParseAddress(z)
			if err != nil {
				bad(p.Line, "%v", err)
				continue
			}
			t.Zones = append(t.Zones, a.Zone)
		}
	} else {
		t.Zones = append(t.Zones, blockZones...)
	}
	sample := sampleFor(t)
	for _, l := range p.Block {
		switch l.Name {
		case "answer", "additional", "authority":
			if len(l.Args) == 0 {
				bad(l.Line, "%s needs at least one record", l.Name)
			}
			for _, text := range l.Args {
				a := parseAnswer(text, l.Line, sample)
				if a.Err != "" {
					bad(l.Line, "%s %q: %s", l.Name, text, a.Err)
				}
				switch l.Name {
				case "answer":
					t.Answers = append(t.Answers, a)
				case "additional":
					t.Additional = append(t.Additional, a)
				default:
					t.Authority = append(t.Authority, a)
				}
			}
		case "rcode":
			if len(l.Args) != 1 {
				bad(l.Line, "rcode takes one argument")
				continue
			}
			t.Rcode = l.Args[0]
			if _, ok := dns.StringToRcode[t.Rcode]; !ok {
				bad(l.Line, "unknown rcode %q", t.Rcode)
			}
		case "match":
			for _, expr := range l.Args {
				if len(expr) > maxRegexpLen {
					bad(l.Line, "match expression longer than %d characters", maxRegexpLen)
					continue
				}
				if _, err := regexp.Compile(expr); err != nil {
					bad(l.Line, "match %q: %v", expr, err)
				}
				t.Match = append(t.Match, expr)
			}
		case "fallthrough":
			t.Fallthrough = true
		case "ederror", "upstream":
		default:
			bad(l.Line, "unknown property %q", l.Name)
		}
	}
	return t, problems
}

// sampleFor is the query a static answer is rendered for: a name inside the entry's first
// zone, with its class and type (ANY read as IN and A).
func sampleFor(t Template) sampleQuery {
	zone := "."
	if len(t.Zones) > 0 {
		zone = t.Zones[0]
	}
	name := "lanaccess-probe." + zone
	if zone == "." {
		name = "lanaccess-probe."
	}
	class, qtype := t.Class, t.Type
	if class == "" || class == "ANY" {
		class = "IN"
	}
	if qtype == "" || qtype == "ANY" {
		qtype = "A"
	}
	return sampleQuery{Name: name, Zone: zone, Class: class, Type: qtype}
}

// Matches reports whether the entry is tried for a query of this class and type (CoreDNS
// also matches a query whose class or type is ANY).
func (t Template) Matches(class, qtype string) bool {
	return (t.Class == "ANY" || t.Class == class) && (t.Type == "ANY" || t.Type == qtype)
}

// CatchAll reports whether the entry is `template ANY ANY`.
func (t Template) CatchAll() bool { return t.Class == "ANY" && t.Type == "ANY" }

// NoData reports whether the entry answers NOERROR with no record for every name it sees:
// what `template ANY ANY { rcode NOERROR }` is for.
func (t Template) NoData() bool {
	return len(t.Answers) == 0 && (t.Rcode == "" || t.Rcode == "NOERROR") && !t.Fallthrough && len(t.Match) == 0
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
	return fmt.Sprintf("template %s %s (line %d)", t.Class, t.Type, t.Line)
}
