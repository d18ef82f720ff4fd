package corefile

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coredns/caddy/caddyfile"
)

// This file groups a Corefile's tokens into server blocks the way CoreDNS does at start-up
// (github.com/coredns/caddy caddyfile/parse.go at the commit CoreDNS v1.14.7 builds with:
// parseAll, addresses, blockContents, directives, directive, doImport, snippets). caddy's own
// parser cannot be used for it: it reads imported files from the local disk. Here imports are
// read from Files, the pod's filesystem as the API shows it, and a path the API does not show
// makes the model incomplete instead of wrong. Everything else follows caddy step by step, so
// the blocks, the tokens of each directive and the parse errors are the ones CoreDNS gets; a
// test compares the two parsers on every Corefile without file imports.

// Limits of caddy's parser (caddyfile/parse.go maxSnippetExpansions, maxFileExpansions). Its
// error for too many file imports prints the snippet limit, as CoreDNS does.
const (
	maxSnippetExpansions = 10000
	maxFileExpansions    = 100000
)

// maxTokens and maxImports bound the expanded Corefile doctor reads (a cluster object is hostile
// input, and caddy copies the token list at each expansion): an import graph that grows past
// them is reported as not readable, never evaluated. An import loop is told at once (the
// import chain of each token is known), far below caddy's own limits.
const (
	maxTokens  = 1 << 18
	maxImports = 1000
)

// ptoken is a token with the import chain it came through.
type ptoken struct {
	caddyfile.Token
	from *frame
}

// frame is one level of import: the file or snippet whose tokens these are.
type frame struct {
	file    string // absolute path of an imported file ("" for the -conf file itself)
	snippet string
	parent  *frame
}

func (fr *frame) imports(file string, conf string) bool {
	for ; fr != nil; fr = fr.parent {
		if fr.snippet == "" && fr.file == file {
			return true
		}
	}
	return file == conf
}

func (fr *frame) importsSnippet(name string) bool {
	for ; fr != nil; fr = fr.parent {
		if fr.snippet == name {
			return true
		}
	}
	return false
}

// rawBlock is one server block as caddy groups it: its keys, and each directive entry with
// its tokens in the order written.
type rawBlock struct {
	keys    []ptoken
	entries []rawEntry
	// close is the block's closing brace (zero when it has none).
	close ptoken
}

type rawEntry struct {
	dir  string
	toks []ptoken
}

// tokens returns the tokens of every entry of dir, as caddy hands them to the plugin's setup.
func (b *rawBlock) tokens(dir string) []caddyfile.Token {
	var out []caddyfile.Token
	for _, e := range b.entries {
		if e.dir == dir {
			for _, t := range e.toks {
				out = append(out, t.Token)
			}
		}
	}
	return out
}

func (b *rawBlock) has(dir string) bool {
	return slices.ContainsFunc(b.entries, func(e rawEntry) bool { return e.dir == dir })
}

// grouper is caddy's parser over the pod's files.
type grouper struct {
	files *Files
	// conf is the path CoreDNS was given with -conf: the file name of the Corefile's own tokens.
	conf   string
	toks   []ptoken
	cursor int
	eof    bool
	block  rawBlock

	snippets  map[string][]ptoken
	snippetsN int
	filesN    int

	imports []Import
	// unknown says why part of the expanded Corefile cannot be read ("" when all of it can).
	unknown []string
}

// Import is one `import` CoreDNS expands at start-up, and what it brought.
type Import struct {
	// File and Line say where the import is written ("" File: the Corefile itself).
	File    string
	Line    int
	Pattern string
	// Snippet is true for an import of a snippet defined earlier.
	Snippet bool
	// Matched are the files the pattern matched, in the order CoreDNS reads them.
	Matched []string
	// Unknown says why the files it matches cannot be read from the API ("" when they can).
	Unknown string
}

func newGrouper(files *Files, conf string, src []byte) *grouper {
	g := &grouper{files: files, conf: conf, cursor: -1}
	g.toks = lexTokens(src, "", nil)
	return g
}

// lexTokens splits src with caddy's lexer (through its public Dispenser); the tokens get file
// as their File, as caddy's doSingleImport does for imported files.
func lexTokens(src []byte, file string, from *frame) []ptoken {
	d := caddyfile.NewDispenser(file, bytes.NewReader(src))
	var out []ptoken
	for d.Next() {
		out = append(out, ptoken{Token: caddyfile.Token{File: file, Line: d.Line(), Text: d.Val()}, from: from})
	}
	return out
}

func (g *grouper) next() bool {
	if g.cursor < len(g.toks)-1 {
		g.cursor++
		return true
	}
	return false
}

func (g *grouper) val() string {
	if g.cursor < 0 || g.cursor >= len(g.toks) {
		return ""
	}
	return g.toks[g.cursor].Text
}

func (g *grouper) cur() ptoken {
	if g.cursor < 0 || g.cursor >= len(g.toks) {
		return ptoken{}
	}
	return g.toks[g.cursor]
}

func (g *grouper) line() int { return g.cur().Line }

// file is the file of the current token as caddy names it in errors and resolves relative
// imports against: the imported file, else the -conf path.
func (g *grouper) file() string {
	if f := g.cur().File; f != "" {
		return f
	}
	return g.conf
}

func lineBreaks(t ptoken) int { return strings.Count(t.Text, "\n") }

func (g *grouper) nextArg() bool {
	if g.cursor < 0 {
		g.cursor++
		return true
	}
	if g.cursor >= len(g.toks) {
		return false
	}
	if g.cursor < len(g.toks)-1 && g.toks[g.cursor].File == g.toks[g.cursor+1].File &&
		g.toks[g.cursor].Line+lineBreaks(g.toks[g.cursor]) == g.toks[g.cursor+1].Line {
		g.cursor++
		return true
	}
	return false
}

func (g *grouper) isNewLine() bool {
	if g.cursor < 1 {
		return true
	}
	if g.cursor > len(g.toks)-1 {
		return false
	}
	prev, cur := g.toks[g.cursor-1], g.toks[g.cursor]
	return prev.File != cur.File || prev.Line+lineBreaks(prev) < cur.Line
}

// ParseError is an error CoreDNS stops at while reading its configuration, with the file and
// line it names.
type ParseError struct {
	// Name says where the Corefile comes from (e.g. "ConfigMap lan-dns/lan-dns key Corefile").
	Name string
	// File is the pod path the error is in ("" for the Corefile itself), Line its line (0 when
	// CoreDNS names none).
	File string
	Line int
	// Msg is CoreDNS's message; Hint what doctor adds to it (a likely cause).
	Msg, Hint string
	// Unknown is true when doctor stopped reading (a bound of its own), not CoreDNS: whether
	// CoreDNS starts cannot be told.
	Unknown bool
}

func (e *ParseError) Error() string {
	where := e.Name
	if e.File != "" {
		where += ", imported file " + e.File
	}
	msg := e.Msg
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", where, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", where, msg)
}

func (g *grouper) errf(format string, args ...any) error {
	return &ParseError{File: g.cur().File, Line: g.line(), Msg: fmt.Sprintf(format, args...)}
}

func (g *grouper) argErr() error {
	if g.val() == "{" {
		return g.errf("Unexpected token '{', expecting argument")
	}
	return g.errf("Wrong argument count or unexpected line ending after '%s'", g.val())
}

func (g *grouper) syntaxErr(expected string) error {
	return g.errf("Syntax error: Unexpected token '%s', expecting '%s'", g.val(), expected)
}

func (g *grouper) parseAll() ([]rawBlock, error) {
	var blocks []rawBlock
	for g.next() {
		g.block = rawBlock{}
		if err := g.begin(); err != nil {
			return blocks, err
		}
		if len(g.block.keys) > 0 {
			blocks = append(blocks, g.block)
		}
	}
	return blocks, nil
}

func (g *grouper) begin() error {
	if len(g.toks) == 0 {
		return nil
	}
	if err := g.addresses(); err != nil {
		return err
	}
	if g.eof {
		return nil // a Corefile that is only a line of keys
	}
	if name, ok := g.snippetName(); ok {
		if g.snippets == nil {
			g.snippets = map[string][]ptoken{}
		}
		if _, dup := g.snippets[name]; dup {
			return g.errf("redeclaration of previously declared snippet %s", name)
		}
		toks, err := g.snippetTokens()
		if err != nil {
			return err
		}
		// caddy's guard against a snippet that imports itself on a line of its own
		for i := 0; i+1 < len(toks); i++ {
			atLineStart := i == 0 || toks[i-1].File != toks[i].File || toks[i-1].Line != toks[i].Line
			if toks[i].Text == "import" && atLineStart && g.env(toks[i+1].Text) == name {
				return g.errf("maximum snippet import depth (%d) exceeded", maxSnippetExpansions)
			}
		}
		g.snippets[name] = toks
		g.block.keys = nil
		return nil
	}
	return g.blockContents()
}

func (g *grouper) addresses() error {
	expectingAnother := false
	for {
		tkn := g.env(g.val())
		if tkn == "import" && g.isNewLine() {
			if err := g.doImport(); err != nil {
				return err
			}
			continue
		}
		if tkn == "{" {
			if expectingAnother {
				return g.errf("Expected another address but had '%s' - check for extra comma", tkn)
			}
			break
		}
		if tkn != "" {
			key := g.cur()
			key.Text = tkn
			if strings.HasSuffix(tkn, ",") {
				key.Text = tkn[:len(tkn)-1]
				expectingAnother = true
			} else {
				expectingAnother = false
			}
			g.block.keys = append(g.block.keys, key)
		}
		hasNext := g.next()
		if expectingAnother && !hasNext {
			return g.errf("Unexpected EOF")
		}
		if !hasNext {
			g.eof = true
			break
		}
		if !expectingAnother && g.isNewLine() {
			break
		}
	}
	return nil
}

func (g *grouper) snippetName() (string, bool) {
	k := g.block.keys
	if len(k) == 1 && strings.HasPrefix(k[0].Text, "(") && strings.HasSuffix(k[0].Text, ")") {
		return strings.TrimSuffix(k[0].Text[1:], ")"), true
	}
	return "", false
}

func (g *grouper) snippetTokens() ([]ptoken, error) {
	if g.val() != "{" {
		return nil, g.syntaxErr("{")
	}
	count := 1
	toks := []ptoken{}
	for g.next() {
		if g.val() == "}" {
			count--
			if count == 0 {
				break
			}
		}
		if g.val() == "{" {
			count++
		}
		toks = append(toks, g.cur())
	}
	if count != 0 {
		return nil, g.syntaxErr("}")
	}
	return toks, nil
}

func (g *grouper) blockContents() error {
	opened := g.val() == "{"
	if !opened {
		g.cursor-- // a single server block may go without braces
	}
	if err := g.directives(); err != nil {
		return err
	}
	if opened && g.val() != "}" {
		return g.syntaxErr("}")
	}
	if opened {
		g.block.close = g.cur()
	}
	return nil
}

func (g *grouper) directives() error {
	for g.next() {
		if g.val() == "}" {
			break
		}
		if g.val() == "import" {
			if err := g.doImport(); err != nil {
				return err
			}
			g.cursor--
			continue
		}
		if err := g.directive(); err != nil {
			return err
		}
	}
	return nil
}

func (g *grouper) directive() error {
	dir := g.env(g.val())
	var b Build
	if g.files != nil {
		b = g.files.Build
	}
	switch has, known := b.KnowsDirective(dir); {
	case !known:
		return &ParseError{File: g.cur().File, Line: g.line(), Unknown: true,
			Msg: fmt.Sprintf("directive '%s' is not a plugin of stock CoreDNS, and the image %s is not a stock CoreDNS of a known version: its build may know it (no fix removes it); what it does is not modelled", dir, b.Image)}
	case !has:
		return g.errf("Unknown directive '%s'", dir)
	case !IsStockDirective(dir) && (dir != "k8s_gateway" || !b.Gateway):
		// federation of a v1.6 build: known to start, not modelled
		return &ParseError{File: g.cur().File, Line: g.line(), Unknown: true,
			Msg: fmt.Sprintf("directive '%s' of CoreDNS %s is not modelled", dir, b.Version())}
	}
	first := g.cur()
	first.Text = dir
	entry := rawEntry{dir: dir, toks: []ptoken{first}}
	nesting := 0
	for g.next() {
		v := g.val()
		switch {
		case v == "{":
			nesting++
		case g.isNewLine() && nesting == 0:
			g.cursor--
			g.block.entries = append(g.block.entries, entry)
			return nil
		case v == "}" && nesting > 0:
			nesting--
		case v == "}" && nesting == 0:
			return g.errf("Unexpected '}' because no matching opening brace")
		case v == "import" && g.isNewLine():
			if err := g.doImport(); err != nil {
				return err
			}
			g.cursor--
			continue
		}
		t := g.cur()
		t.Text = g.env(t.Text)
		entry.toks = append(entry.toks, t)
	}
	if nesting > 0 {
		return g.errf("Unexpected EOF")
	}
	g.block.entries = append(g.block.entries, entry)
	return nil
}

// doImport replaces `import PATTERN` with the tokens of the snippet or the files it names,
// leaving the cursor on the first token brought in (caddy's doImport).
func (g *grouper) doImport() error {
	at := g.cur()
	if !g.nextArg() {
		return g.argErr()
	}
	pattern := g.env(g.val())
	patternTok := g.cur()
	if pattern == "" {
		return g.errf("Import requires a non-empty filepath")
	}
	if g.nextArg() {
		return g.errf("Import takes only one argument (glob pattern or file)")
	}
	before := g.toks[:g.cursor-1]
	after := g.toks[g.cursor+1:]
	imp := Import{File: at.File, Line: at.Line, Pattern: pattern}
	var brought []ptoken
	if toks, ok := g.snippets[pattern]; ok && g.snippets != nil {
		if g.snippetsN >= maxSnippetExpansions || patternTok.from.importsSnippet(pattern) {
			return g.errf("maximum snippet import depth (%d) exceeded", maxSnippetExpansions)
		}
		g.snippetsN++
		imp.Snippet = true
		fr := &frame{snippet: pattern, parent: patternTok.from}
		for _, t := range toks {
			t.from = fr
			brought = append(brought, t)
		}
	} else {
		if g.filesN >= maxFileExpansions {
			return g.errf("maximum file import depth (%d) exceeded", maxSnippetExpansions)
		}
		if g.filesN >= maxImports {
			return &tooLarge{}
		}
		g.filesN++
		var err error
		if brought, err = g.importFiles(&imp, patternTok); err != nil {
			return err
		}
	}
	g.imports = append(g.imports, imp)
	if len(before)+len(brought)+len(after) > maxTokens {
		return &tooLarge{}
	}
	toks := make([]ptoken, 0, len(before)+len(brought)+len(after))
	toks = append(append(append(toks, before...), brought...), after...)
	g.toks = toks
	g.cursor--
	return nil
}

// tooLarge stops the expansion of an import graph larger than doctor reads.
type tooLarge struct{}

func (*tooLarge) Error() string {
	return fmt.Sprintf("the Corefile's imports expand to more than %d tokens or %d file imports, more than doctor reads", maxTokens, maxImports)
}

func (g *grouper) importFiles(imp *Import, at ptoken) ([]ptoken, error) {
	base := g.file()
	if !path.IsAbs(base) {
		base = path.Join("/", base) // the official image's working directory is / (Dockerfile WORKDIR)
	}
	pattern := imp.Pattern
	if !path.IsAbs(pattern) {
		pattern = path.Join(path.Dir(base), pattern)
	}
	if strings.Count(pattern, "*") > 1 || strings.Count(pattern, "?") > 1 ||
		(strings.Contains(pattern, "[") && strings.Contains(pattern, "]")) {
		return nil, g.errf("Glob pattern may only contain one wildcard (*), but has others: %s", pattern)
	}
	if isPlaceholder(pattern) || strings.Contains(pattern, "{$") || strings.Contains(pattern, "{%") {
		imp.Unknown = "the path depends on an environment variable of the pod"
		g.unknown = append(g.unknown, fmt.Sprintf("import %s: %s", imp.Pattern, imp.Unknown))
		return nil, nil
	}
	matches, err := g.files.glob(pattern)
	var unknown errUnknownPath
	switch {
	case asUnknown(err, &unknown):
		imp.Unknown = unknown.Error()
		g.unknown = append(g.unknown, fmt.Sprintf("import %s: %s", imp.Pattern, imp.Unknown))
		return nil, nil
	case err != nil:
		return nil, g.errf("Failed to use import pattern %s: %v", imp.Pattern, err)
	}
	if len(matches) == 0 && !strings.ContainsAny(pattern, "*?[]") {
		return nil, g.errf("File to import not found: %s", imp.Pattern)
	}
	imp.Matched = matches
	var out []ptoken
	for _, m := range matches {
		switch g.files.stat(m) {
		case kindDir:
			return nil, g.errf("Could not import %s: is a directory", m)
		case kindUnknown:
			imp.Unknown = errUnknownPath{m}.Error()
			g.unknown = append(g.unknown, fmt.Sprintf("import %s: %s", imp.Pattern, imp.Unknown))
			continue
		}
		if at.from.imports(m, cleanAbs(base)) || (at.from == nil && m == cleanAbs(g.conf)) {
			// The file's tokens bring this import again: caddy expands it until its limit.
			return nil, g.errf("maximum file import depth (%d) exceeded", maxSnippetExpansions)
		}
		file, _ := g.files.Read(m)
		out = append(out, lexTokens([]byte(file.Content), m, &frame{file: m, parent: at.from})...)
	}
	return out, nil
}

func asUnknown(err error, target *errUnknownPath) bool {
	u, ok := err.(errUnknownPath)
	if ok {
		*target = u
	}
	return ok
}

// env replaces {$NAME} and {%NAME%} with the container's literal environment variables, as
// caddy's replaceEnvVars does with the process's; placeholders of other variables stay as
// written, and whatever depends on them is unknown.
func (g *grouper) env(s string) string {
	if g.files == nil || len(g.files.Env) == 0 || !strings.Contains(s, "{") {
		return s
	}
	s = replacePlaceholders(s, "{%", "%}", g.files.Env)
	return replacePlaceholders(s, "{$", "}", g.files.Env)
}

func replacePlaceholders(s, start, end string, env map[string]string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, start)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], end)
		if j < 0 || j <= len(start) {
			break
		}
		name := s[i+len(start) : i+j]
		v, ok := env[name]
		if !ok {
			b.WriteString(s[:i+j+len(end)])
			s = s[i+j+len(end):]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+len(end):]
	}
	b.WriteString(s)
	return b.String()
}
