package corefile

import (
	"bytes"
	"strings"
	"unicode"

	"github.com/coredns/caddy/caddyfile"
)

// envMarker is slipped between '{' and '$' (or '%') so that the caddyfile parser, which
// replaces {$VAR} with the environment of the process that parses, leaves the placeholders
// alone: the variables belong to the DNS pod, not to the machine running doctor.
const envMarker = "\uE000"

type token struct {
	text string
	line int
}

// lex splits src into tokens with the caddyfile lexer, through its public Dispenser.
func lex(name string, src []byte) []token {
	d := caddyfile.NewDispenser(name, bytes.NewReader(src))
	var toks []token
	for d.Next() {
		toks = append(toks, token{text: d.Val(), line: d.Line()})
	}
	return toks
}

// neutralize drops file imports (recording them) and guards env placeholders. It reports
// whether anything changed, so the common case parses the original text untouched.
func neutralize(toks []token) (kept []token, imports []Import, changed bool) {
	snippets := map[string]bool{}
	depth := 0
	kept = make([]token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.text {
		case "{":
			depth++
		case "}":
			if depth > 0 {
				depth--
			}
		}
		// A snippet is a top-level "(name)" key followed by its block.
		if depth == 0 && len(t.text) > 2 && t.text[0] == '(' && t.text[len(t.text)-1] == ')' &&
			i+1 < len(toks) && toks[i+1].text == "{" {
			snippets[t.text[1:len(t.text)-1]] = true
		}
		if t.text == "import" && i+1 < len(toks) && toks[i+1].line == t.line {
			arg := toks[i+1].text
			// Only a snippet declared earlier is resolved without the filesystem.
			if !snippets[arg] {
				imports = append(imports, Import{Line: t.line, Pattern: arg})
				changed = true
				i++
				continue
			}
		}
		if strings.Contains(t.text, "{$") || strings.Contains(t.text, "{%") {
			t.text = strings.ReplaceAll(t.text, "{$", "{"+envMarker+"$")
			t.text = strings.ReplaceAll(t.text, "{%", "{"+envMarker+"%")
			changed = true
		}
		kept = append(kept, t)
	}
	return kept, imports, changed
}

// render writes tokens back as Corefile text, each on its original line, so that the
// parser's error lines still point at the user's text.
func render(toks []token) []byte {
	var b strings.Builder
	line := 1
	atStart := true
	for _, t := range toks {
		for line < t.line {
			b.WriteByte('\n')
			line++
			atStart = true
		}
		if !atStart {
			b.WriteByte(' ')
		}
		b.WriteString(quote(t.text))
		line += strings.Count(t.text, "\n")
		atStart = false
	}
	b.WriteByte('\n')
	return []byte(b.String())
}

// quote returns text as the lexer would read it back: bare when it can be, else in double
// quotes with inner quotes escaped (the only escape the lexer knows).
func quote(text string) string {
	needs := text == "" || text[0] == '"' || strings.ContainsRune(text, '#') ||
		strings.IndexFunc(text, unicode.IsSpace) >= 0
	if !needs {
		return text
	}
	return `"` + strings.ReplaceAll(text, `"`, `\"`) + `"`
}

func restore(s string) string { return strings.ReplaceAll(s, envMarker, "") }

// keyLine is the first key of a top-level group (server block or snippet) and its line.
type keyLine struct {
	key  string
	line int
}

// topLevelKeys finds the first key of each top-level group, in order, so blocks returned by
// the parser (which carry no line numbers) can be given theirs.
func topLevelKeys(toks []token) []keyLine {
	var out []keyLine
	depth := 0
	prevLine := 0
	for i, t := range toks {
		switch t.text {
		case "{":
			depth++
		case "}":
			if depth > 0 {
				depth--
			}
		default:
			if depth == 0 && (i == 0 || t.line > prevLine) {
				out = append(out, keyLine{key: strings.TrimSuffix(restore(t.text), ","), line: t.line})
			}
		}
		prevLine = t.line + strings.Count(t.text, "\n")
	}
	return out
}
