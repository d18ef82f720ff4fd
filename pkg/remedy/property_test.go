package remedy

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// hostile are values someone else can write into the objects, Corefiles, DNS answers and
// HTTP headers that end up in a printed command: each must come out of the shell as the very
// same word, without running anything.
var hostile = []string{
	"", " ", "plain", "it's", `"`, `\`, "$(id)", "`id`", "${HOME}", "$HOME", "a;b", "a|b", "a&b",
	"a\nb", "a\tb", "\r", "a\r\nb", "*", "?", "[a]", "~root", "=cmd", "-rf", "--", "#c", "!", "!!", "{a,b}",
	"$'\\x41'", "'\"'\"'", "<x", ">x", "2>&1", "a\x00b", "\x1b[31mred", "\u202eevil", "日本",
	"\xff\xfe", "%s", "\\$(id)", "'$(id)'", `"$(id)"`, "a b c", "x=$(id)",
}

// parseCommand parses line as one simple command in the given shell dialect and returns its
// words as the shell would expand them; it fails the test on anything that would run or
// expand something (command or process substitution, parameter or arithmetic expansion,
// redirection, more than one command).
func parseCommand(t testing.TB, line string, lang syntax.LangVariant) []string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(line), "")
	require.NoError(t, err, "%s does not parse: %q", lang, line)
	require.Len(t, f.Stmts, 1, "one command: %q", line)
	st := f.Stmts[0]
	require.Empty(t, st.Redirs, "no redirection: %q", line)
	require.False(t, st.Background || st.Negated || st.Coprocess, "a plain command: %q", line)
	call, ok := st.Cmd.(*syntax.CallExpr)
	require.True(t, ok, "a simple command: %q", line)
	require.Empty(t, call.Assigns, "no assignment: %q", line)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ExtGlob, *syntax.BraceExp:
			t.Fatalf("%s would expand %T in %q", lang, n, line)
		}
		return true
	})
	// No ReadDir: globbing is off, so an unquoted * would pass through here; the walk above
	// and the real shells below catch that.
	fields, err := expand.Fields(&expand.Config{}, call.Args...)
	require.NoError(t, err)
	return fields
}

func withoutNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }

func FuzzCommandRoundTrips(f *testing.F) {
	for _, h := range hostile {
		f.Add(h, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		words := []string{"kubectl", a, "--flag=" + b, b}
		line := Command(words...)
		if !utf8.ValidString(line) {
			return // the parser refuses invalid UTF-8; the real shells below read it back
		}
		want := make([]string, len(words))
		for i, w := range words {
			// The parser reads "\r\n" as "\n" everywhere (mvdan.cc/sh/v3 syntax/lexer.go,
			// rune: "\r\n turns into \n"); dash and bash keep the "\r", which
			// TestRealShellsReadQuotedWordsBack proves.
			want[i] = strings.ReplaceAll(withoutNUL(w), "\r\n", "\n")
		}
		for _, lang := range []syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash} {
			assert.Equal(t, want, parseCommand(t, line, lang), "%s: %q", lang, line)
		}
	})
}

func FuzzPatchesCarryTheirValues(f *testing.F) {
	for _, h := range hostile {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) {
			// encoding/json replaces invalid bytes with U+FFFD: compare what it would send.
			b, _ := json.Marshal(v)
			require.NoError(t, json.Unmarshal(b, &v))
		}
		line := JSONPatch("ns", "service", "lan-dns", PatchOp{Op: "add", Path: "/metadata/labels/x", Value: v})
		words := parseCommand(t, line, syntax.LangBash)
		var ops []PatchOp
		require.NoError(t, json.Unmarshal([]byte(words[len(words)-1]), &ops))
		assert.Equal(t, v, ops[0].Value)

		line = MergePatch("ns", "service", "lan-dns", map[string]any{"k": v})
		words = parseCommand(t, line, syntax.LangPOSIX)
		var m map[string]string
		require.NoError(t, json.Unmarshal([]byte(words[len(words)-1]), &m))
		assert.Equal(t, v, m["k"])
	})
}

// TestRealShellsReadQuotedWordsBack runs the quoted words through dash and bash, the oracle:
// printf prints each argument back, NUL-terminated, exactly as the shell passed it.
func TestRealShellsReadQuotedWordsBack(t *testing.T) {
	line := Command(append([]string{"printf", `%s\0`}, hostile...)...)
	for _, sh := range []string{"dash", "bash", "sh"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed", sh)
			continue
		}
		t.Run(sh, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, path, "-c", line)
			cmd.Dir = t.TempDir() // a glob that slipped through would match nothing here
			cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			want := make([]string, len(hostile))
			for i, h := range hostile {
				want[i] = withoutNUL(h)
			}
			assert.Equal(t, want, got)
			assert.Empty(t, stderr.String())
		})
	}
}

// readPowerShellSingleQuoted reads a single-quoted PowerShell string as about_Quoting_Rules
// describes it: any of the five single-quote characters, doubled, is one of it; a lone one
// ends the string.
func readPowerShellSingleQuoted(t *testing.T, s string) string {
	t.Helper()
	isQuote := func(r rune) bool { return strings.ContainsRune("'\u2018\u2019\u201a\u201b", r) }
	rs := []rune(s)
	require.GreaterOrEqual(t, len(rs), 2)
	require.Equal(t, '\'', rs[0])
	var b strings.Builder
	i := 1
	for ; i < len(rs); i++ {
		if isQuote(rs[i]) {
			if i+1 < len(rs) && isQuote(rs[i+1]) {
				b.WriteRune(rs[i+1])
				i++
				continue
			}
			break
		}
		b.WriteRune(rs[i])
	}
	require.Equal(t, len(rs)-1, i, "the string ends at the last character: %q", s)
	return b.String()
}

func FuzzPowerShellQuoteRoundTrips(f *testing.F) {
	for _, h := range append(hostile, "\u2018", "a\u201bb", "''", "\u2019'") {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) {
			return // PowerShell strings are UTF-16 text: invalid UTF-8 never reaches one
		}
		assert.Equal(t, v, readPowerShellSingleQuoted(t, PowerShellQuote(v)))
	})
}

func FuzzCommentStaysAComment(f *testing.F) {
	for _, h := range hostile {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, v string) {
		line := Comment("move the template " + v)
		if !utf8.ValidString(line) {
			return // the parser refuses invalid UTF-8; no line break can hide in it
		}
		file, err := syntax.NewParser().Parse(strings.NewReader(line), "")
		require.NoError(t, err)
		assert.Empty(t, file.Stmts, "a comment runs nothing: %q", line)
		assert.NotContains(t, line, "\n")
	})
}
