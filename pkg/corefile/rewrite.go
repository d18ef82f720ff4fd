package corefile

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/miekg/dns"
)

// The rewrite plugin as CoreDNS v1.14.7 runs it (plugin/rewrite): each rule is tried in order
// on the question, and one that does not match leaves it as it came (RewriteIgnored), so a
// rewrite whose rules match none of the names the zone is asked for leaves the zone's answers to
// the plugins after it. Modelled: name rules (exact when written FROM TO, else exact, prefix,
// suffix, substring or regex; FROM lower-cased and made fully qualified except for regex:
// name.go newNameRule, plugin.Name.Normalize), type and class rules (type.go, class.go: applied
// when the question's type or class is FROM), each optionally after `stop` or `continue`
// (rewrite.go newRule), in a directive's arguments or its block (setup.go rewriteParse). A rule
// that matches, and any other rule (edns0, ttl, rcode, cname, answer rewrites), is not
// evaluated: the outcome says so.

// rewriteLeaves reports whether every rewrite rule of the block leaves the question (name, type,
// class IN) unchanged; when one may change it or is not modelled, it sets o.Unknown and names the
// rule.
func (b *ServerBlock) rewriteLeaves(name string, qtype uint16, o *Outcome) bool {
	for _, p := range b.Plugins {
		if p.Name != "rewrite" {
			continue
		}
		args := p.Args
		if len(args) < 2 {
			for _, l := range p.Block {
				args = append(append(args, l.Name), l.Args...)
			}
		}
		applies, modelled := rewriteRuleApplies(args, strings.ToLower(dns.Fqdn(name)), qtype)
		switch {
		case !modelled:
			o.Unknown = fmt.Sprintf("the rewrite at %s (%s) is not evaluated by this model", p.Where(), strings.Join(args, " "))
			o.By = &p
			return false
		case applies:
			o.Unknown = fmt.Sprintf("the rewrite at %s rewrites this question: its answer is not evaluated", p.Where())
			o.By = &p
			return false
		}
	}
	return true
}

// rewriteRuleApplies says whether one rule changes the question (name lower case, fully
// qualified), and whether the model reads the rule at all.
func rewriteRuleApplies(args []string, name string, qtype uint16) (applies, modelled bool) {
	if len(args) > 0 && (strings.EqualFold(args[0], "stop") || strings.EqualFold(args[0], "continue")) {
		args = args[1:]
	}
	if len(args) < 3 {
		return false, false
	}
	rest := args[1:]
	switch strings.ToLower(args[0]) {
	case "type":
		if len(rest) != 2 {
			return false, false
		}
		from, ok := dns.StringToType[strings.ToUpper(rest[0])]
		return ok && from == qtype, ok
	case "class":
		if len(rest) != 2 {
			return false, false
		}
		from, ok := dns.StringToClass[strings.ToUpper(rest[0])]
		return ok && from == dns.ClassINET, ok
	case "name":
		return nameRuleMatches(rest, name)
	}
	return false, false
}

// nameRuleMatches is a name rule's match (plugin/rewrite/name.go newNameRule and the Rewrite
// methods of its rule types); a rule with answer rewrites (more than three arguments) only
// matters when it matches, so it is read the same way.
func nameRuleMatches(rest []string, name string) (applies, modelled bool) {
	norm := func(s string) string { return strings.ToLower(dns.Fqdn(s)) }
	if len(rest) == 2 {
		return norm(rest[0]) == name, true
	}
	from := rest[1]
	switch strings.ToLower(rest[0]) {
	case "exact":
		return norm(from) == name, true
	case "prefix":
		return strings.HasPrefix(name, norm(from)), true
	case "suffix":
		return strings.HasSuffix(name, norm(from)), true
	case "substring":
		return strings.Contains(name, norm(from)), true
	case "regex":
		re, err := regexp.Compile(from)
		if err != nil {
			return false, false
		}
		return re.MatchString(name), true
	}
	return false, false
}
