package report

import (
	"fmt"
	"strings"
	"unicode"
)

// Text that reaches the terminal comes from other people: certificate names, Location headers,
// route hosts, Corefile tokens, exec output, events, API warnings. A control sequence in it could
// move the cursor and redraw a fake "PASS" over the real line, and a bidi override could make
// a name read backwards. Every such character is printed visibly escaped instead.

// Escape renders s on one line: C0 and C1 controls, DEL, line breaks and the Unicode format
// characters that reorder or hide text (bidi overrides, isolates and marks, zero-width) as
// \x1b, \u202e..., and invalid UTF-8 as \xNN.
func Escape(s string) string { return escape(s, false) }

// EscapeLines is Escape keeping "\n" (multi-line text such as a remediation).
func EscapeLines(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	if isPlain(s, keepNewlines) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\n' && keepNewlines:
			b.WriteRune(r)
		case r == unicode.ReplacementChar && isInvalidAt(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPlain(s string, keepNewlines bool) bool {
	for i := range len(s) {
		c := s[i]
		if c >= 0x80 || c == 0x7f || (c < 0x20 && (c != '\n' || !keepNewlines)) {
			return false
		}
	}
	return true
}

func isInvalidAt(s string, i int) bool {
	return !strings.HasPrefix(s[i:], "\uFFFD")
}
