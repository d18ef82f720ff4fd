package podruntime

import "strings"

// BindCorefile adds "bind ip" to every server block of a Corefile, so that a CoreDNS started in
// a node namespace listens on its pod IP only, as it would inside its own pod network namespace.
// The rest of the text is kept byte for byte, so what CoreDNS serves is the ConfigMap's
// configuration. Snippets "(name) { }" and environment placeholders "{$VAR}" are not blocks.
func BindCorefile(text, ip string) string {
	var b strings.Builder
	depth := 0
	lineStart := 0 // index in text where the current top-level header began
	for i := 0; i < len(text); i++ {
		if end, ok := verbatimEnd(text, i); ok {
			b.WriteString(text[i:end])
			i = end - 1
			continue
		}
		c := text[i]
		b.WriteByte(c)
		switch {
		case c == '{':
			if depth == 0 && !strings.HasPrefix(strings.TrimSpace(text[lineStart:i]), "(") {
				b.WriteString("\n    bind " + ip)
			}
			depth++
		case c == '}':
			if depth > 0 {
				depth--
			}
			if depth == 0 {
				lineStart = i + 1
			}
		case c == '\n' && depth == 0:
			lineStart = i + 1
		}
	}
	return b.String()
}

// verbatimEnd reports whether a token whose braces do not count starts at text[i] (a comment up
// to the end of its line, a quoted string, a "{$VAR}" placeholder) and where it ends.
func verbatimEnd(text string, i int) (int, bool) {
	switch {
	case text[i] == '#':
		if end := strings.IndexByte(text[i:], '\n'); end >= 0 {
			return i + end, true
		}
		return len(text), true
	case text[i] == '"':
		j := i + 1
		for j < len(text) && text[j] != '"' {
			if text[j] == '\\' {
				j++
			}
			j++
		}
		return min(j+1, len(text)), true
	case text[i] == '{' && i+1 < len(text) && text[i+1] == '$':
		if end := strings.IndexByte(text[i:], '}'); end >= 0 {
			return i + end + 1, true
		}
		return len(text), true
	}
	return 0, false
}

// HasDirective reports whether a Corefile uses a plugin directive (a line starting with it),
// e.g. "reload": only then does CoreDNS pick up a changed file by itself.
func HasDirective(text, directive string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == directive {
			return true
		}
	}
	return false
}
