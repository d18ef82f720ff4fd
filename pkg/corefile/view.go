package corefile

import (
	"net/netip"
	"regexp"
	"strings"
)

// The view plugin as CoreDNS v1.14.7 runs it: server blocks that share a zone and port are
// tried top to bottom, and the first whose view matches, or that has none, takes the query
// (plugin/view/README.md "Server Block Ordering"; core/dnsserver/server.go ServeDNS,
// passAllFilterFuncs). A view matches when every one of its `expr` lines is true
// (plugin/view/view.go Filter). The model evaluates the expressions that test the client's
// address against networks, `incidr(client_ip(), 'NET')`, alone or joined by `||` / `or`
// (plugin/pkg/expression: client_ip is the packet's source); any other expression is not
// evaluated.

// A double-quoted network never reaches the expression: the Corefile's lexer takes the quotes.
var incidrTerm = regexp.MustCompile(`^incidr\(\s*client_ip\(\)\s*,\s*'([^']+)'\s*\)$`)

// viewMatches says whether the block's view admits a query from src; ok is false when one of
// its expressions is not evaluated here.
func (b *ServerBlock) viewMatches(src netip.Addr) (match, ok bool) {
	for _, p := range b.Plugins {
		if p.Name != "view" {
			continue
		}
		for _, l := range p.Block {
			if l.Name != "expr" {
				continue
			}
			m, ok := evalInCIDR(strings.Join(l.Args, " "), src)
			if !ok {
				return false, false
			}
			if !m {
				return false, true
			}
		}
	}
	return true, true
}

// evalInCIDR evaluates `incidr(client_ip(), 'NET') [|| ...]` for src.
func evalInCIDR(expr string, src netip.Addr) (match, ok bool) {
	expr = strings.ReplaceAll(expr, " or ", " || ")
	for term := range strings.SplitSeq(expr, "||") {
		m := incidrTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return false, false
		}
		p, err := netip.ParsePrefix(m[1])
		if err != nil {
			return false, false
		}
		if p.Contains(src.Unmap()) {
			match = true
		}
	}
	return match, true
}

// viewName is the block's view ("lan (line 2)"), "" when it has none.
func (b *ServerBlock) viewName() string {
	for _, p := range b.Plugins {
		if p.Name == "view" {
			name := ""
			if len(p.Args) > 0 {
				name = p.Args[0] + " "
			}
			return name + "(" + p.Where() + ")"
		}
	}
	return ""
}

// pickByView chooses among the blocks of one zone and port, in Corefile order, as CoreDNS
// does for a query from src. Without a source, the first block with a view is taken and
// Outcome.View says that it answers only the clients its view admits.
func pickByView(bs []*ServerBlock, src netip.Addr, o *Outcome) (*ServerBlock, string) {
	hasView := false
	for _, b := range bs {
		hasView = hasView || b.Has("view")
	}
	if !hasView {
		// Several blocks without view: CoreDNS refuses to start (checkServers); the model
		// still reads the first, as the configuration meant it.
		return bs[0], ""
	}
	if !src.IsValid() {
		for _, b := range bs {
			if b.Has("view") {
				o.View = b.viewName()
				return b, ""
			}
		}
	}
	for _, b := range bs {
		if !b.Has("view") {
			return b, ""
		}
		match, ok := b.viewMatches(src)
		if !ok {
			return nil, "the view " + b.viewName() + " has an expression this model does not evaluate"
		}
		if match {
			return b, ""
		}
	}
	return nil, "" // no block admits the query: REFUSED
}
