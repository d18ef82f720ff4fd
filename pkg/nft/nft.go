package nft

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// Ruleset is what the parsers keep of a ruleset: chains, their rules in order, and the named
// sets of addresses.
type Ruleset struct {
	Chains []Chain
	Rules  []Rule
	// Sets are named sets' elements by "family table name".
	Sets map[string][]netip.Prefix
}

// Chain is a chain; Type and Hook are set for base chains.
type Chain struct {
	Family, Table, Name string
	Type, Hook          string
}

func (c Chain) key() string { return c.Family + " " + c.Table + " " + c.Name }

// Rule is one rule, reduced to the matches that decide which packets it applies to and what
// it does to them.
type Rule struct {
	Family, Table, Chain string
	// Source and Dest are the address matches (nil: none); SourceSet names a set whose
	// elements are looked up in Ruleset.Sets.
	Source, Dest               []netip.Prefix
	SourceSet                  string
	SourceNegated, DestNegated bool
	OutIface                   string
	OutIfaceNegated            bool
	// Verdict is masquerade, snat, accept, return, drop, jump, goto or "" (none); Target the
	// chain of a jump or goto, the address of a snat.
	Verdict, Target string
	// Conditional is set when the rule matches more than addresses and the out-interface (a
	// protocol, a port, a mark, a conntrack state...): it applies to some packets only.
	Conditional bool
	// Raw is the rule as `nft list ruleset` prints it (the JSON form is rendered so).
	Raw string
}

func (r Rule) chainKey() string { return r.Family + " " + r.Table + " " + r.Chain }

// covers reports whether every packet from pool satisfies the rule's source match, and
// whether that could be told (an unknown named set cannot).
func (rs Ruleset) covers(r Rule, pool netip.Prefix) (covers, known bool) {
	src := r.Source
	if r.SourceSet != "" {
		elems, ok := rs.Sets[r.Family+" "+r.Table+" "+r.SourceSet]
		if !ok {
			return false, false
		}
		src = elems
	}
	if src == nil {
		return true, true
	}
	for _, p := range src {
		if r.SourceNegated && p.Overlaps(pool) {
			return false, true
		}
		if !r.SourceNegated && p.Bits() <= pool.Bits() && p.Contains(pool.Addr()) {
			return true, true
		}
	}
	return r.SourceNegated, true
}

// SourceNATFor returns the masquerade and snat rules that rewrite every packet from pool,
// walking from the nat chains hooked at postrouting (families ip and inet) into the chains
// they jump to, with the semantics of linuxnet's iptables reading: a conditional rule does
// not count, and after a return or accept that some of the pool's packets take, nothing later
// in that chain is certain. The rules are given as linuxnet.NATRule so callers judge both
// sources alike.
func (rs Ruleset) SourceNATFor(pool netip.Prefix) []linuxnet.NATRule {
	w := natWalk{rs: rs, pool: pool.Masked(), byChain: map[string][]Rule{}, seen: map[string]bool{}}
	for _, r := range rs.Rules {
		w.byChain[r.chainKey()] = append(w.byChain[r.chainKey()], r)
	}
	for _, c := range rs.Chains {
		if c.Type == "nat" && c.Hook == "postrouting" && (c.Family == "ip" || c.Family == "inet") {
			w.walk(c.key(), 0)
		}
	}
	return w.out
}

// natWalk follows the chains a pool's packets go through.
type natWalk struct {
	rs      Ruleset
	pool    netip.Prefix
	byChain map[string][]Rule
	seen    map[string]bool
	out     []linuxnet.NATRule
}

func (w *natWalk) walk(key string, depth int) {
	if w.seen[key] || depth > 8 {
		return
	}
	w.seen[key] = true
	for _, r := range w.byChain[key] {
		covers, known := w.rs.covers(r, w.pool)
		if !covers && known {
			continue
		}
		if !w.apply(r, known && !r.Conditional, depth) {
			return
		}
	}
}

// apply takes one rule that the pool's packets may meet; false when the chain ends for some
// of them there.
func (w *natWalk) apply(r Rule, certain bool, depth int) bool {
	unrestricted := r.Dest == nil && r.OutIface == ""
	switch r.Verdict {
	case "masquerade", "snat":
		if certain {
			w.out = append(w.out, r.natRule())
		}
	case "accept", "return", "drop":
		return certain && !unrestricted
	case "jump", "goto":
		if certain {
			w.walk(r.Family+" "+r.Table+" "+r.Target, depth+1)
		}
		return r.Verdict == "jump" || !certain || !unrestricted
	}
	return true
}

// natRule is the rule in linuxnet's terms.
func (r Rule) natRule() linuxnet.NATRule {
	n := linuxnet.NATRule{Chain: r.Family + " " + r.Table + " " + r.Chain, OutIface: r.OutIface, SourceNegated: r.SourceNegated,
		Target: strings.ToUpper(r.Verdict), ToSource: r.Target, Conditional: r.Conditional, Raw: r.Raw}
	if len(r.Source) == 1 {
		n.Source = r.Source[0]
	}
	if len(r.Dest) == 1 {
		n.Dest, n.DestNegated = r.Dest[0], r.DestNegated
	}
	return n
}

// render prints a rule as `nft list ruleset` would, from its parsed parts.
func (r Rule) render() string {
	var w []string
	addrs := func(field string, ps []netip.Prefix, neg bool) {
		if ps == nil {
			return
		}
		w = append(w, "ip", field)
		if neg {
			w = append(w, "!=")
		}
		var s []string
		for _, p := range ps {
			s = append(s, prefixString(p))
		}
		if len(s) == 1 {
			w = append(w, s[0])
		} else {
			w = append(w, "{ "+strings.Join(s, ", ")+" }")
		}
	}
	addrs("saddr", r.Source, r.SourceNegated)
	if r.SourceSet != "" {
		w = append(w, "ip", "saddr", "@"+r.SourceSet)
	}
	addrs("daddr", r.Dest, r.DestNegated)
	if r.OutIface != "" {
		w = append(w, "oifname")
		if r.OutIfaceNegated {
			w = append(w, "!=")
		}
		w = append(w, fmt.Sprintf("%q", r.OutIface))
	}
	if r.Conditional {
		w = append(w, "(and other matches)")
	}
	switch r.Verdict {
	case "snat":
		w = append(w, "snat", "to", r.Target)
	case "jump", "goto":
		w = append(w, r.Verdict, r.Target)
	case "":
	default:
		w = append(w, r.Verdict)
	}
	return strings.Join(w, " ")
}

// prefixString prints a host prefix as its address, as nft does.
func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// parseAddr reads "10.8.0.0/24" or "10.8.0.7" as a prefix (IPv4 only: the pool's family).
func parseAddr(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		return netip.PrefixFrom(a, 32), true
	}
	return netip.Prefix{}, false
}
