package corefile

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// The acl plugin as CoreDNS v1.14.7 runs it (coredns/coredns plugin/acl/setup.go parse,
// acl.go ServeDNS and matchWithPolicies): every `acl [ZONES...] { ACTION [type QTYPE...]
// [net SOURCE...] }` of a block is one rule of one handler. For a query, the rules whose zones
// match the name are tried in order; in a rule, the first policy whose types hold the query's
// type (none written: every type) and whose nets hold the packet's source address (none
// written, or `*`: every address) decides: allow ends the acl and the query goes on, block
// answers REFUSED, filter answers NOERROR with no record, drop answers nothing; no policy:
// the next rule; no rule: the query goes on.

// ACLAction is what an acl policy does with a query.
type ACLAction string

// The acl actions; ACLNone: no policy matched, the query goes on.
const (
	ACLNone   ACLAction = ""
	ACLAllow  ACLAction = "allow"
	ACLBlock  ACLAction = "block"
	ACLFilter ACLAction = "filter"
	ACLDrop   ACLAction = "drop"
)

type aclPolicy struct {
	action ACLAction
	types  map[uint16]bool // nil: every type
	nets   []netip.Prefix  // nil: every address
	line   int
}

type aclRule struct {
	zones    []string
	policies []aclPolicy
}

// ACL is the acl handler of a server block: every acl directive of the block, in order.
type ACL struct {
	rules []aclRule
	// Plugin is the block's first acl directive (where findings point).
	Plugin Plugin
}

// ACL returns the block's acl handler, nil when the block has none or one CoreDNS refuses
// (the start-up checks say so).
func (b *ServerBlock) ACL() *ACL {
	var a *ACL
	for _, p := range b.Plugins {
		if p.Name != "acl" {
			continue
		}
		if a == nil {
			a = &ACL{Plugin: p}
		}
		r, err := parseACLRule(p, b.Zones())
		if err != nil {
			return nil
		}
		a.rules = append(a.rules, r)
	}
	return a
}

func parseACLRule(p Plugin, blockZones []string) (aclRule, error) {
	r := aclRule{zones: originsFromArgsOrBlock(p.Args, blockZones, nil)}
	for _, l := range p.Block {
		pol := aclPolicy{action: ACLAction(strings.ToLower(l.Name)), line: l.Line}
		switch pol.action {
		case ACLAllow, ACLBlock, ACLFilter, ACLDrop:
		default:
			return r, fmt.Errorf("line %d: unexpected token %q; expect 'allow', 'block', 'filter' or 'drop'", l.Line, l.Name)
		}
		if err := pol.readSections(l.Args); err != nil {
			return r, fmt.Errorf("line %d: %w", l.Line, err)
		}
		r.policies = append(r.policies, pol)
	}
	return r, nil
}

// readSections reads `type QTYPE...` and `net SOURCE...` sections, as acl's parse does (`*` in
// a section means every type or address; a net without a mask is one address).
func (pol *aclPolicy) readSections(args []string) error {
	for len(args) > 0 {
		section := strings.ToLower(args[0])
		if section != "type" && section != "net" {
			return fmt.Errorf("unexpected token %q; expect 'type | net'", args[0])
		}
		i := 1
		for i < len(args) && !strings.EqualFold(args[i], "type") && !strings.EqualFold(args[i], "net") {
			i++
		}
		tokens := args[1:i]
		args = args[i:]
		if len(tokens) == 0 {
			return fmt.Errorf("no token specified in %q section", section)
		}
		var err error
		if section == "type" {
			err = pol.readTypes(tokens)
		} else {
			err = pol.readNets(tokens)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (pol *aclPolicy) readTypes(tokens []string) error {
	if pol.types == nil {
		pol.types = map[uint16]bool{}
	}
	for _, t := range tokens {
		if t == "*" {
			pol.types[dns.TypeNone] = true
			return nil // acl's parse stops reading the section at `*`
		}
		qt, ok := dns.StringToType[t]
		if !ok {
			return fmt.Errorf("unexpected token %q; expect legal QTYPE", t)
		}
		pol.types[qt] = true
	}
	return nil
}

func (pol *aclPolicy) readNets(tokens []string) error {
	for _, t := range tokens {
		if t == "*" {
			pol.nets = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
			return nil
		}
		if !strings.Contains(t, "/") {
			if strings.Contains(t, ":") {
				t += "/128"
			} else {
				t += "/32"
			}
		}
		p, err := netip.ParsePrefix(t)
		if err != nil {
			return fmt.Errorf("illegal CIDR notation %q", t)
		}
		pol.nets = append(pol.nets, p.Masked())
	}
	return nil
}

func (pol aclPolicy) matches(qtype uint16, src netip.Addr) bool {
	if pol.types != nil && !pol.types[dns.TypeNone] && !pol.types[qtype] {
		return false
	}
	if pol.nets == nil {
		return true
	}
	src = src.Unmap()
	for _, n := range pol.nets {
		if n.Contains(src) {
			return true
		}
	}
	return false
}

// Judge is what the acl does with a query for name (FQDN, lower case) of qtype from src, and
// the line of the policy that decides (0 when none does: the query goes on).
func (a *ACL) Judge(name string, qtype uint16, src netip.Addr) (ACLAction, int) {
	for _, r := range a.rules {
		if matchZone(r.zones, name) == "" {
			continue
		}
		for _, pol := range r.policies {
			if !pol.matches(qtype, src) {
				continue
			}
			if pol.action == ACLAllow {
				return ACLAllow, pol.line
			}
			return pol.action, pol.line
		}
	}
	return ACLNone, 0
}

// serveACL plays the acl for the query: with a source address, its verdict (done when it
// answers or drops); without one, the query goes on as if allowed and the outcome records that
// an acl decides who gets the answer (Outcome.ACL).
func (b *ServerBlock) serveACL(name string, q Question, o *Outcome) bool {
	a := b.ACL()
	if a == nil {
		o.Unknown = "the acl plugin may answer: its configuration is not one CoreDNS accepts"
		return true
	}
	if !q.Source.IsValid() {
		o.ACL = a
		return false
	}
	switch action, _ := a.Judge(name, q.Type, q.Source); action {
	case ACLBlock:
		o.Rcode, o.RecordsKnown, o.Records = dns.RcodeRefused, true, nil
	case ACLFilter:
		o.Rcode, o.RecordsKnown, o.Records = dns.RcodeSuccess, true, nil
	case ACLDrop:
		o.Dropped = true
	default:
		return false
	}
	return true
}
