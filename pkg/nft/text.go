package nft

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseText reads `nft list ruleset` (for an nft built without JSON support). It knows the
// statements that decide source NAT: address and out-interface matches, masquerade, snat,
// jump, goto, accept, return, drop, named sets' elements; any other match makes a rule
// conditional.
func ParseText(out string) (Ruleset, error) {
	rs := Ruleset{Sets: map[string][]netip.Prefix{}}
	var family, table string
	var chain *Chain
	var set string
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		f := tokens(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(line, "#"):
		case f[0] == "table" && len(f) >= 3:
			family, table = f[1], f[2]
		case f[0] == "chain" && len(f) >= 2:
			rs.Chains = append(rs.Chains, Chain{Family: family, Table: table, Name: f[1]})
			chain = &rs.Chains[len(rs.Chains)-1]
		case f[0] == "set" && len(f) >= 2:
			set = f[1]
		case f[0] == "}":
			if set != "" {
				set = ""
			} else {
				chain = nil
			}
		case set != "":
			if f[0] == "elements" && len(f) > 2 {
				ps, _, err := prefixes(f[2:])
				if err != nil {
					return rs, fmt.Errorf("line %d: set %s: %w", n+1, set, err)
				}
				rs.Sets[family+" "+table+" "+set] = ps
			}
		case chain != nil && f[0] == "type" && len(f) > 1:
			chain.Type = f[1]
			for i := 2; i+1 < len(f); i++ {
				if f[i] == "hook" {
					chain.Hook = strings.TrimSuffix(f[i+1], ";")
				}
			}
		case chain != nil && f[0] != "policy":
			rs.Rules = append(rs.Rules, textRule(family, table, chain.Name, line, f))
		}
	}
	return rs, nil
}

// tokens splits a line into words, keeping "quoted" words and braces as words of their own
// and dropping the commas between set elements.
func tokens(line string) []string {
	line = strings.NewReplacer("{", " { ", "}", " } ", ",", " ").Replace(line)
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case (c == ' ' || c == '\t') && !quoted:
			flush()
		default:
			cur.WriteRune(c)
		}
	}
	flush()
	return out
}

// textRule reads one rule line's words.
func textRule(family, table, chain, line string, f []string) Rule {
	r := Rule{Family: family, Table: table, Chain: chain, Raw: line}
	for i := 0; i < len(f); i++ {
		w := f[i]
		if w == "meta" {
			continue
		}
		next := func() string {
			if i+1 < len(f) {
				i++
				return f[i]
			}
			return ""
		}
		switch w {
		case "ip":
			field := next()
			if field != "saddr" && field != "daddr" {
				r.Conditional = true
				continue
			}
			i = r.textAddress(field, f, i+1)
		case "oifname":
			v := next()
			if v == "!=" {
				r.OutIfaceNegated, v = true, next()
			}
			r.OutIface = v
		case "masquerade", "accept", "return", "drop":
			r.Verdict = w
			i = len(f) // flags after masquerade (random, persistent) change nothing here
		case "snat":
			r.Verdict = "snat"
			for _, t := range f[i+1:] {
				if t != "ip" && t != "to" {
					r.Target = t
					break
				}
			}
			i = len(f)
		case "jump", "goto":
			r.Verdict, r.Target = w, next()
		case "counter":
			if i+4 < len(f) && f[i+1] == "packets" && f[i+3] == "bytes" {
				i += 4
			}
		case "comment":
			next()
		default:
			r.Conditional = true
		}
	}
	return r
}

// textAddress reads an address match at f[i:] ("[!=] ADDR", "@set", "{ A B }") and returns
// the index of its last word.
func (r *Rule) textAddress(field string, f []string, i int) int {
	neg := false
	if i < len(f) && f[i] == "!=" {
		neg, i = true, i+1
	}
	if i >= len(f) {
		r.Conditional = true
		return i
	}
	if strings.HasPrefix(f[i], "@") && field == "saddr" {
		r.SourceSet, r.SourceNegated = f[i][1:], neg
		return i
	}
	ps, used, err := prefixes(f[i:])
	if err != nil {
		r.Conditional = true
		return i
	}
	if field == "saddr" {
		r.Source, r.SourceNegated = ps, neg
	} else {
		r.Dest, r.DestNegated = ps, neg
	}
	return i + used - 1
}

// prefixes reads "ADDR" or "{ ADDR ... }" and says how many words it used.
func prefixes(f []string) ([]netip.Prefix, int, error) {
	if len(f) == 0 {
		return nil, 0, fmt.Errorf("no address")
	}
	if f[0] != "{" {
		p, ok := parseAddr(f[0])
		if !ok {
			return nil, 1, fmt.Errorf("%q is not an IPv4 address or prefix", f[0])
		}
		return []netip.Prefix{p}, 1, nil
	}
	var out []netip.Prefix
	for i := 1; i < len(f); i++ {
		if f[i] == "}" {
			return out, i + 1, nil
		}
		p, ok := parseAddr(f[i])
		if !ok {
			return nil, i + 1, fmt.Errorf("%q is not an IPv4 address or prefix", f[i])
		}
		out = append(out, p)
	}
	return nil, len(f), fmt.Errorf("an unclosed set")
}
