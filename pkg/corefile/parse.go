package corefile

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"
)

// Parse reads a Corefile. name says where it came from and appears in errors. A syntax error
// CoreDNS would refuse to start with is a *ParseError naming the line; content CoreDNS would
// reject later (a bad zone key, a bad template) is listed in Corefile.Problems.
func Parse(name string, src []byte) (*Corefile, error) {
	toks := lex(name, src)
	kept, imports, changed := neutralize(toks)
	input := src
	if changed {
		input = render(kept)
	}
	blocks, err := caddyfile.Parse(name, bytes.NewReader(input), nil)
	if err != nil {
		return nil, toParseError(name, err)
	}
	c := &Corefile{Name: name, Imports: imports}
	keys := topLevelKeys(kept)
	next := 0
	for _, sb := range blocks {
		line := 0
		for i := next; i < len(keys); i++ {
			if len(sb.Keys) > 0 && keys[i].key == restore(sb.Keys[0]) {
				line, next = keys[i].line, i+1
				break
			}
		}
		c.Blocks = append(c.Blocks, buildBlock(c, name, sb, line))
	}
	return c, nil
}

// caddyfile errors read "<file>:<line> - <message>".
var caddyErr = regexp.MustCompile(`(?s)^.*:(\d+) - (.*)$`)

func toParseError(name string, err error) *ParseError {
	m := caddyErr.FindStringSubmatch(err.Error())
	if m == nil {
		return &ParseError{Name: name, Msg: err.Error()}
	}
	line, _ := strconv.Atoi(m[1])
	return &ParseError{Name: name, Line: line, Msg: restore(m[2])}
}

func buildBlock(c *Corefile, name string, sb caddyfile.ServerBlock, line int) ServerBlock {
	b := ServerBlock{Line: line}
	for _, k := range sb.Keys {
		k = restore(k)
		b.Keys = append(b.Keys, k)
		addr, err := ParseAddress(k)
		if err != nil {
			c.Problems = append(c.Problems, Problem{Line: line, Message: err.Error()})
			continue
		}
		b.Addresses = append(b.Addresses, addr)
	}
	plugins := pluginsOf(name, sb)
	for _, p := range plugins {
		if !IsStockDirective(p.Name) {
			c.Problems = append(c.Problems, Problem{Line: p.Line, Message: unknownDirective(p.Name)})
		}
	}
	// Templates keep the order of their tokens, which is the order CoreDNS tries them in,
	// even when a snippet import gives them lines out of order.
	for _, p := range plugins {
		if p.Name != "template" {
			continue
		}
		t, problems := parseTemplate(p, b.Zones())
		b.Templates = append(b.Templates, t)
		c.Problems = append(c.Problems, problems...)
	}
	sort.SliceStable(plugins, func(i, j int) bool { return plugins[i].Line < plugins[j].Line })
	b.Plugins = plugins
	if b.Line == 0 && len(b.Plugins) > 0 {
		b.Line = b.Plugins[0].Line
	}
	return b
}

// pluginsOf reads each directive the way CoreDNS plugins do: with a Dispenser over the
// directive's tokens, arguments up to the line end or '{', then the lines of its block.
// Entries of one directive keep their token order; directives come in name order.
func pluginsOf(name string, sb caddyfile.ServerBlock) []Plugin {
	dirs := make([]string, 0, len(sb.Tokens))
	for dir := range sb.Tokens {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	var out []Plugin
	for _, dir := range dirs {
		d := caddyfile.NewDispenserTokens(name, sb.Tokens[dir])
		for d.Next() {
			p := Plugin{Name: restore(d.Val()), Line: d.Line(), Args: restoreAll(d.RemainingArgs())}
			for d.NextBlock() {
				p.Block = append(p.Block, Line{Name: restore(d.Val()), Line: d.Line(), Args: restoreAll(d.RemainingArgs())})
			}
			out = append(out, p)
		}
	}
	return out
}

func unknownDirective(name string) string {
	msg := "unknown directive \"" + name + "\": a stock CoreDNS refuses to start"
	if _, err := ParseAddress(name); err == nil && (name == "." || strings.ContainsAny(name, ".:")) {
		msg += " (it looks like a server block key: a '}' is probably missing above it)"
	}
	return msg
}

func restoreAll(args []string) []string {
	for i := range args {
		args[i] = restore(args[i])
	}
	return args
}
