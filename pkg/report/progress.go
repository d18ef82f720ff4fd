package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/mattn/go-runewidth"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// Progress shows, on a terminal, one status line rewritten in place while checks run:
// which checks are running and how many are done. It writes nothing when disabled (pipes, CI
// logs, JSON output), so machine output stays clean.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	running map[string]bool
	done    int
	total   int
	// width is the display width of the line on screen; columns the terminal's (0: unknown,
	// the line is not cut).
	width   int
	columns int
}

// NewProgress returns a progress line on w; enabled should be true only for a terminal.
func NewProgress(w io.Writer, enabled bool) *Progress {
	return &Progress{w: w, enabled: enabled, running: map[string]bool{}}
}

// WithColumns cuts every line to a terminal of n columns (one less, so that the cursor never
// reaches the last column and wraps, which would leave "\r" rewriting the wrong line); 0 does
// not cut. It returns p.
func (p *Progress) WithColumns(n int) *Progress {
	p.columns = n
	return p
}

// Observe is an engine.Runner observer.
func (p *Progress) Observe(e engine.Event) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = e.Total
	if e.Started {
		p.running[e.Check.ID] = true
	} else {
		delete(p.running, e.Check.ID)
		p.done++
	}
	ids := make([]string, 0, len(p.running))
	for id := range p.running {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	line := fmt.Sprintf("checking… %d/%d done", p.done, p.total)
	if len(ids) > 0 {
		line += "  running " + strings.Join(ids, " ")
	}
	p.write(line)
}

// Message shows a transient line (e.g. "discovering the setup…").
func (p *Progress) Message(s string) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write(s)
}

// write rewrites the line in place. Widths are display widths (runewidth: "…" is one column,
// a CJK character two), not bytes, so the padding erases exactly what the last line showed.
func (p *Progress) write(line string) {
	line = Escape(line)
	if p.columns > 1 && runewidth.StringWidth(line) > p.columns-1 {
		line = runewidth.Truncate(line, p.columns-1, "…")
	}
	w := runewidth.StringWidth(line)
	pad := ""
	if n := p.width - w; n > 0 {
		pad = strings.Repeat(" ", n)
	}
	_, _ = fmt.Fprintf(p.w, "\r%s%s", line, pad) // a transient line: best effort
	p.width = w
}

// Clear erases the status line before the report is printed.
func (p *Progress) Clear() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.width > 0 {
		_, _ = fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width)) // best effort, as write
		p.width = 0
	}
}

// Attempt reports one --wait attempt that did not pass yet, with what still fails.
func Attempt(w io.Writer, n int, results []engine.Result, next string) {
	var failing []string
	for _, r := range results {
		switch r.Status {
		case engine.StatusFail, engine.StatusError, engine.StatusWarn:
			failing = append(failing, r.ID+"="+string(r.Status))
		}
	}
	// Progress on stderr, best effort: the final report carries the result.
	_, _ = fmt.Fprintf(w, "attempt %d: still failing: %s; retrying in %s\n", n, Escape(strings.Join(failing, " ")), next)
}

// AttemptError says that attempt n of --wait could not run, and when the next starts. The error
// may carry an API Status message or a server's text: its controls are escaped like every
// other text from outside (a terminal escape in it would otherwise reach the terminal).
func AttemptError(w io.Writer, n int, err error, next string) {
	// Progress on stderr, best effort: the final report carries the result.
	_, _ = fmt.Fprintf(w, "attempt %d: %s; retrying in %s\n", n, Escape(err.Error()), next)
}

// Error prints a final error line for the user.
func Error(w io.Writer, err error) {
	_, _ = fmt.Fprintf(w, "error: %s\n", EscapeLines(err.Error())) // nowhere left to report a failed write
}
