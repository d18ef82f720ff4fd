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
		c := text[i]
		switch {
		case c == '#':
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) - i
			}
			b.WriteString(text[i : i+end])
			i += end - 1
			continue
		case c == '"':
			j := i + 1
			for j < len(text) && text[j] != '"' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(text) {
				j = len(text) - 1
			}
			b.WriteString(text[i : j+1])
			i = j
			continue
		case c == '{' && i+1 < len(text) && text[i+1] == '$':
			end := strings.IndexByte(text[i:], '}')
			if end < 0 {
				end = len(text) - i - 1
			}
			b.WriteString(text[i : i+end+1])
			i += end
			continue
		case c == '{':
			b.WriteByte(c)
			if depth == 0 && !strings.HasPrefix(strings.TrimSpace(text[lineStart:i]), "(") {
				b.WriteString("\n    bind " + ip)
			}
			depth++
			continue
		case c == '}':
			if depth > 0 {
				depth--
			}
			b.WriteByte(c)
			if depth == 0 {
				lineStart = i + 1
			}
			continue
		case c == '\n' && depth == 0:
			lineStart = i + 1
		}
		b.WriteByte(c)
	}
	return b.String()
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
