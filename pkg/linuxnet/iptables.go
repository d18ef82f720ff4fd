package linuxnet

import (
	"net/netip"
	"strings"
)

// NATRule is one rule of the nat table with the matches that decide whose packets it
// rewrites. Prefixes are invalid (zero) when the rule does not restrict them.
type NATRule struct {
	Chain         string
	Source        netip.Prefix
	SourceNegated bool
	Dest          netip.Prefix
	DestNegated   bool
	OutIface      string
	Target        string // MASQUERADE, SNAT, DNAT, RETURN, ACCEPT or a user chain
	ToSource      string // SNAT --to-source
	// Conditional is set when the rule has matches beyond source, destination, out-interface
	// and comments (a mark, a conntrack state, a protocol, an ipset...): it applies to some
	// packets of the pool only, and whether to these ones cannot be told from the text.
	Conditional bool
	Raw         string
}

// NATTable is the nat table as iptables-save printed it.
type NATTable struct {
	Chains []string
	Rules  []NATRule
}

// ParseIPTablesSave reads the *nat section of iptables-save output (legacy or nft backend,
// same format). Other tables and unreadable lines are ignored.
func ParseIPTablesSave(out string) NATTable {
	var t NATTable
	inNat := false
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			inNat = line == "*nat"
		case !inNat || line == "" || strings.HasPrefix(line, "#"):
		case line == "COMMIT":
			inNat = false
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			t.Chains = append(t.Chains, name)
		case strings.HasPrefix(line, "-A "):
			if r, ok := parseNATRule(line); ok {
				t.Rules = append(t.Rules, r)
			}
		}
	}
	return t
}

func parseNATRule(line string) (NATRule, bool) {
	tok := splitArgs(line)
	r := NATRule{Raw: line}
	neg := false
	for i := 0; i < len(tok); i++ {
		arg := func() string {
			if i+1 < len(tok) {
				i++
				return tok[i]
			}
			return ""
		}
		switch tok[i] {
		case "!":
			neg = true
			continue
		case "-A":
			r.Chain = arg()
		case "-s", "--source":
			p, ok := parsePrefixOrAddr(arg())
			if !ok {
				return r, false
			}
			r.Source, r.SourceNegated = p, neg
		case "-d", "--destination":
			p, ok := parsePrefixOrAddr(arg())
			if !ok {
				return r, false
			}
			r.Dest, r.DestNegated = p, neg
		case "-o", "--out-interface":
			r.OutIface = arg()
			if neg {
				r.OutIface = "!" + r.OutIface
			}
		case "-j", "--jump", "-g", "--goto":
			r.Target = arg()
		case "--to-source":
			r.ToSource = arg()
		case "-m", "--match":
			if m := arg(); m != "comment" {
				r.Conditional = true
			}
		case "--comment", "--to-ports", "--to-destination":
			arg()
		case "--random", "--random-fully", "--persistent":
		default:
			if strings.HasPrefix(tok[i], "-") {
				r.Conditional = true
			}
		}
		neg = false
	}
	return r, r.Chain != "" && r.Target != ""
}

// splitArgs splits a rule line on spaces, keeping "double quoted" words (comments) whole.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, c := range s {
		switch {
		case c == '"':
			quoted, have = !quoted, true
		case c == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// coversSource reports whether every packet from pool satisfies the rule's source match.
func (r NATRule) coversSource(pool netip.Prefix) bool {
	if !r.Source.IsValid() {
		return true
	}
	if r.SourceNegated {
		return !r.Source.Overlaps(pool)
	}
	return r.Source.Bits() <= pool.Bits() && r.Source.Contains(pool.Addr())
}

// SourceNATFor returns the MASQUERADE and SNAT rules that rewrite every packet from pool,
// walking from POSTROUTING into the user chains it jumps to. A rule restricted by destination
// or out-interface is still returned (callers show those restrictions); a conditional rule is
// not, and after a conditional RETURN or ACCEPT nothing later in that chain is certain either
// (kube-proxy returns unmarked packets before its MASQUERADE).
func (t NATTable) SourceNATFor(pool netip.Prefix) []NATRule {
	pool = pool.Masked()
	byChain := map[string][]NATRule{}
	for _, r := range t.Rules {
		byChain[r.Chain] = append(byChain[r.Chain], r)
	}
	var out []NATRule
	seen := map[string]bool{}
	var walk func(chain string, depth int)
	walk = func(chain string, depth int) {
		if seen[chain] || depth > 8 {
			return
		}
		seen[chain] = true
		for _, r := range byChain[chain] {
			if !r.coversSource(pool) {
				continue
			}
			switch r.Target {
			case "MASQUERADE", "SNAT":
				if !r.Conditional {
					out = append(out, r)
				}
			case "ACCEPT", "RETURN":
				if r.Conditional || (!r.Dest.IsValid() && r.OutIface == "") {
					return // some or all of the pool's packets leave this chain here
				}
			default:
				if _, user := byChain[r.Target]; user && !r.Conditional {
					walk(r.Target, depth+1)
				}
			}
		}
	}
	walk("POSTROUTING", 0)
	return out
}

// Matches reports whether the rule's destination and out-interface matches take a packet to
// dst leaving through outIface (the source is SourceNATFor's business). known is false when
// the rule names an out-interface and outIface is unknown (""). iptables reads an interface
// name ending in "+" as a prefix (iptables(8): "If the interface name ends in a "+", then any
// interface which begins with this name will match"), and "!" negates either match.
func (r NATRule) Matches(dst netip.Addr, outIface string) (match, known bool) {
	if r.Dest.IsValid() && r.Dest.Contains(dst.Unmap()) == r.DestNegated {
		return false, true
	}
	if r.OutIface == "" {
		return true, true
	}
	if outIface == "" {
		return false, false
	}
	name, neg := strings.CutPrefix(r.OutIface, "!")
	var same bool
	if prefix, ok := strings.CutSuffix(name, "+"); ok {
		same = strings.HasPrefix(outIface, prefix)
	} else {
		same = outIface == name
	}
	return same != neg, true
}
