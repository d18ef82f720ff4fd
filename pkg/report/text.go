package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/fatih/color"
	"github.com/mitchellh/go-wordwrap"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// TextOptions control the human format.
type TextOptions struct {
	// Color enables ANSI colours; the caller decides (terminal and NO_COLOR), never this package.
	Color bool
	// Verbose shows info findings and evidence of passing checks.
	Verbose bool
	// Width wraps findings' messages and evidence to this many columns (0: no wrapping).
	// Remediations are never wrapped: they are commands and YAML to paste.
	Width int
}

type palette struct{ pass, warn, fail, skip, err, dim, bold *color.Color }

func newPalette(on bool) palette {
	mk := func(a ...color.Attribute) *color.Color {
		c := color.New(a...)
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
		return c
	}
	return palette{
		pass: mk(color.FgGreen), warn: mk(color.FgYellow), fail: mk(color.FgRed, color.Bold),
		skip: mk(color.FgHiBlack), err: mk(color.FgMagenta), dim: mk(color.Faint), bold: mk(color.Bold),
	}
}

func (p palette) status(s engine.Status) string {
	label := fmt.Sprintf("%-5s", strings.ToUpper(string(s)))
	switch s {
	case engine.StatusPass:
		return p.pass.Sprint(label)
	case engine.StatusWarn:
		return p.warn.Sprint(label)
	case engine.StatusFail:
		return p.fail.Sprint(label)
	case engine.StatusError:
		return p.err.Sprint(label)
	}
	return p.skip.Sprint(label)
}

// WriteText writes the grouped human report, remediation under each problem, and the closing
// line "N passed, N warned, N failed, N skipped" (", N errors" when any).
func WriteText(w io.Writer, r Report, o TextOptions) error {
	p := newPalette(o.Color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s", p.bold.Sprintf("kubectl lanaccess %s", r.Command))
	if r.Cluster.Context != "" || r.Cluster.Server != "" {
		fmt.Fprintf(&b, "  context %s  server %s", Escape(orDash(r.Cluster.Context)), Escape(orDash(r.Cluster.Server)))
	}
	b.WriteString("\n")
	for _, kv := range r.Subject {
		fmt.Fprintf(&b, "  %-10s %s\n", Escape(kv.Key)+":", Escape(kv.Value))
	}
	group := ""
	for _, res := range r.Results {
		if g := Section(res); g != group {
			group = g
			fmt.Fprintf(&b, "\n%s\n", p.bold.Sprint(g))
		}
		fmt.Fprintf(&b, "  %s %-7s %s", p.status(res.Status), Escape(res.ID), Escape(res.Title))
		if res.Duration > 0 {
			fmt.Fprintf(&b, " %s", p.dim.Sprintf("(%s)", roundDuration(res.Duration)))
		}
		b.WriteString("\n")
		if res.Reason != "" {
			fmt.Fprintf(&b, "          %s\n", p.dim.Sprint(Escape(res.Reason)))
		}
		for _, f := range res.Findings {
			if f.Severity == engine.SeverityInfo && !o.Verbose {
				continue
			}
			writeFinding(&b, p, f, o.Verbose || f.Severity != engine.SeverityInfo, o.Width)
		}
		if len(res.Suppressed) > 0 {
			fmt.Fprintf(&b, "          %s\n", p.dim.Sprint("silenced by --skip: "+suppressedText(res.Suppressed)))
		}
	}
	s := engine.Summarize(r.Results)
	fmt.Fprintf(&b, "\n%d passed, %d warned, %d failed, %d skipped", s.Pass, s.Warn, s.Fail, s.Skip)
	if s.Error > 0 {
		fmt.Fprintf(&b, ", %d errors", s.Error)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFinding(b *strings.Builder, p palette, f engine.Finding, withEvidence bool, width int) {
	mark := map[engine.Severity]string{engine.SeverityFail: p.fail.Sprint("✗"), engine.SeverityWarn: p.warn.Sprint("!"), engine.SeverityInfo: p.dim.Sprint("i")}[f.Severity]
	// The line is wrapped on its plain text, then coloured: colour codes take no column.
	text := Escape(f.Message)
	if f.Object != "" {
		text = Escape(f.Object) + ": " + text
	}
	if f.Code != "" && f.Severity != engine.SeverityInfo {
		text += " [" + f.Code + "]"
	}
	lines := wrap(text, width, 12)
	if f.Object != "" {
		lines[0] = p.bold.Sprint(Escape(f.Object)+":") + strings.TrimPrefix(lines[0], Escape(f.Object)+":")
	}
	fmt.Fprintf(b, "          %s %s\n", mark, strings.Join(lines, "\n            "))
	if withEvidence {
		if ev := evidenceText(f.Evidence); ev != "" {
			evLines := wrap("evidence: "+Escape(ev), width, 14)
			evLines[0] = p.dim.Sprint("evidence:") + strings.TrimPrefix(evLines[0], "evidence:")
			fmt.Fprintf(b, "            %s\n", strings.Join(evLines, "\n              "))
		}
	}
	if f.Remediation != "" {
		lines := strings.Split(strings.TrimRight(EscapeLines(f.Remediation), "\n"), "\n")
		fmt.Fprintf(b, "            %s %s\n", p.dim.Sprint("fix:"), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(b, "                 %s\n", l)
		}
	}
}

// evidenceText renders evidence as sorted key=value pairs, values as compact JSON where they are
// not plain strings, so the same evidence always prints the same way.
func evidenceText(ev map[string]any) string {
	if len(ev) == 0 {
		return ""
	}
	keys := make([]string, 0, len(ev))
	for k := range ev {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := ev[k].(type) {
		case string:
			v = x
		case fmt.Stringer:
			v = x.String()
		default:
			raw, err := json.Marshal(x)
			if err != nil {
				v = fmt.Sprint(x)
			} else {
				v = string(raw)
			}
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// suppressedText is "LA106-ADMISSION (1), LA107-NO-AUTH (2)", sorted.
func suppressedText(m map[string]int) string {
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s (%d)", c, m[c]))
	}
	return strings.Join(parts, ", ")
}

// wrap breaks text into lines that fit width once indented by indent columns (0 width: one
// line). A word longer than a line stays whole.
func wrap(text string, width, indent int) []string {
	if width <= 0 || width-indent < 20 {
		return []string{text}
	}
	return strings.Split(wordwrap.WrapString(text, uint(width-indent)), "\n")
}
