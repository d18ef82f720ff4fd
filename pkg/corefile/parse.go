package corefile

import (
	"errors"
	"fmt"

	"github.com/coredns/caddy/caddyfile"
)

// Load reads the Corefile CoreDNS is started with (-conf conf) from the pod's files, expanding
// its imports from the same files, and checks it as CoreDNS does at start-up. name says where
// it comes from and appears in errors. A Corefile CoreDNS cannot even group into server blocks
// (a syntax error, an unknown directive, an import it cannot read) is a *ParseError naming the
// file and line; what it refuses later (a bad key, a plugin argument, a zone defined twice) is
// listed in Corefile.Problems.
func Load(name string, files *Files, conf string) (*Corefile, error) {
	f, ok := files.Read(conf)
	if !ok {
		if files.Known(conf) {
			// coremain/run.go confLoader: os.ReadFile of the -conf path
			return nil, &ParseError{Name: name, Msg: fmt.Sprintf("open %s: no such file or directory", conf)}
		}
		return nil, &ParseError{Name: name, Msg: errUnknownPath{conf}.Error()}
	}
	return load(name, files, conf, []byte(f.Content))
}

// Parse reads one Corefile's text alone: the files it imports are unknown (Corefile.Incomplete
// says so), snippets are expanded.
func Parse(name string, src []byte) (*Corefile, error) {
	return load(name, nil, "Corefile", src)
}

func load(name string, files *Files, conf string, src []byte) (*Corefile, error) {
	g := newGrouper(files, conf, src)
	raws, err := g.parseAll()
	if err != nil {
		if _, big := errors.AsType[*tooLarge](err); big {
			return nil, &ParseError{Name: name, Msg: err.Error(), Unknown: true}
		}
		if pe, ok := errors.AsType[*ParseError](err); ok {
			pe.Name = name
			pe.Hint = explainUnknownDirective(pe.Msg)
			return nil, pe
		}
		return nil, &ParseError{Name: name, Msg: err.Error()}
	}
	c := &Corefile{Name: name, Conf: conf, Imports: g.imports, Incomplete: g.unknown, files: files}
	for _, imp := range g.imports {
		if !imp.Snippet && imp.Unknown == "" && len(imp.Matched) == 0 {
			// caddy logs "[WARNING] No files matching import glob pattern" and goes on
			c.Warnings = append(c.Warnings, Problem{File: imp.File, Line: imp.Line,
				Message: "No files matching import glob pattern: " + imp.Pattern})
		}
	}
	for _, rb := range raws {
		c.Blocks = append(c.Blocks, c.buildBlock(rb))
	}
	c.inspectKeys()
	c.setupPlugins()
	c.checkServers()
	return c, nil
}

// explainUnknownDirective gives the likely cause when an "unknown directive" is a server block
// key: a '}' missing above it made the parser read the next block as directives.
func explainUnknownDirective(msg string) string {
	const prefix = "Unknown directive '"
	if len(msg) <= len(prefix) || msg[:len(prefix)] != prefix {
		return ""
	}
	name := msg[len(prefix) : len(msg)-1]
	if _, err := parseKey(name); err == nil && (name == "." || containsAny(name, ".:")) {
		return "it looks like a server block key: a '}' is probably missing above it"
	}
	return ""
}

func containsAny(s, chars string) bool {
	for _, r := range chars {
		for _, x := range s {
			if x == r {
				return true
			}
		}
	}
	return false
}

func (c *Corefile) buildBlock(rb rawBlock) ServerBlock {
	b := ServerBlock{raw: rb}
	if len(rb.keys) > 0 {
		b.File, b.Line = rb.keys[0].File, rb.keys[0].Line
	}
	for _, k := range rb.keys {
		b.Keys = append(b.Keys, k.Text)
	}
	if rb.close.File == b.File {
		b.EndLine = rb.close.Line
	}
	for _, e := range rb.entries {
		toks := make([]caddyfile.Token, len(e.toks))
		for i, t := range e.toks {
			toks[i] = t.Token
		}
		d := caddyfile.NewDispenserTokens("", toks)
		d.Next()
		p := Plugin{Name: e.dir, File: e.toks[0].File, Line: e.toks[0].Line, Args: d.RemainingArgs()}
		for _, t := range e.toks {
			if t.File == p.File {
				p.EndLine = t.Line + lineBreaks(t)
			}
		}
		for d.NextBlock() {
			p.Block = append(p.Block, Line{Name: d.Val(), Line: d.Line(), Args: d.RemainingArgs()})
		}
		b.Plugins = append(b.Plugins, p)
	}
	return b
}

// inspectKeys normalises every key as CoreDNS's InspectServerBlocks does; the first key it
// cannot read stops CoreDNS ("error inspecting server blocks: ...").
func (c *Corefile) inspectKeys() {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		for j, k := range b.Keys {
			addrs, err := parseKey(k)
			if err != nil {
				c.problem(b.raw.keys[j].File, b.raw.keys[j].Line, "error inspecting server blocks: "+err.Error())
				return
			}
			b.Addresses = append(b.Addresses, addrs...)
		}
	}
}

func (c *Corefile) problem(file string, line int, msg string) {
	c.Problems = append(c.Problems, Problem{File: file, Line: line, Message: msg})
}

func (c *Corefile) warn(file string, line int, msg string) {
	c.Warnings = append(c.Warnings, Problem{File: file, Line: line, Message: msg})
}
