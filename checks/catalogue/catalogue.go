// Package catalogue is the check catalogue as data: one table of entries (ID, title, section,
// dependencies, what the check proves, the codes of its findings) that drives the order of the
// suites, the report's grouping, --only/--skip (IDs and finding codes) and the catalogue pages
// under docs/catalogue (a test fails when a page drifts from it). Check families build their
// checks with Entry.Check, so a check's identity lives here and nowhere else.
package catalogue

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// Section groups checks in reports.
type Section string

// The sections, in report order.
const (
	Configuration Section = "Configuration"
	NodeListeners Section = "Node listeners"
	DNSPath       Section = "DNS path"
	HTTPSPath     Section = "HTTPS path"
	VPNTrace      Section = "VPN trace"
	Workstation   Section = "This workstation"
)

// The commands that run a catalogue.
const (
	Doctor      = "doctor"
	VPNTraceCmd = "vpn-trace"
	ClientCheck = "client-check"
)

// Code is one stable finding code and what it means. Codes are never renamed: a team that
// silenced one with --skip keeps it silenced across releases.
type Code struct {
	Code    string
	Meaning string
}

// Entry is one check of the catalogue.
type Entry struct {
	ID      string
	Title   string
	Section Section
	Command string
	// DependsOn: the check is skipped when one of these failed, errored or was skipped.
	DependsOn []string
	// Timeout bounds the whole check (zero: the runner's default).
	Timeout time.Duration
	// Proves is the catalogue page's statement of what a PASS proves: prose, kept as data in
	// proves/ID.md (wrapped as a reader likes; read as one line).
	Proves string
	Codes  []Code
	// Reads declares every API call the check makes (reads.go names them): the RBAC bundles'
	// rows, LA001's access reviews and the "not read" notes derive from it, and a test fails
	// when a check reads something it does not declare.
	Reads []manifests.Read
}

// provesFiles holds what each check's PASS proves, one Markdown file per check ID.
//
//go:embed proves/*.md
var provesFiles embed.FS

// provesOf reads proves/ID.md as one line ("" when there is none: a test fails on it).
func provesOf(id string) string {
	raw, err := provesFiles.ReadFile("proves/" + id + ".md")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(raw)), " ")
}

// entries is the whole catalogue in order: each command's checks in the order they run. Every
// check may emit the engine's "-MORE" note (more findings than a report shows). It is built
// once, on first use (every Get and ForCommand read it: building it per call read every
// proves/ file again, 2 MB of a healthy doctor's allocations, issue 27), and shared: callers
// get copies of the entries (All) or entries by value with clipped slices, never the table.
var entries = sync.OnceValue(func() []Entry {
	var all []Entry
	for _, part := range [][]Entry{configuration, nodeListeners, dnsPath, httpsPath, vpnTrace, workstation} {
		for _, e := range part {
			e.Proves = provesOf(e.ID)
			e.Codes = slices.Clip(append(append([]Code(nil), e.Codes...), Code{Code: e.ID + engine.MoreSuffix,
				Meaning: fmt.Sprintf("more than %d findings: the rest are counted, not shown", engine.MaxFindings)}))
			e.DependsOn = slices.Clip(e.DependsOn)
			all = append(all, e)
		}
	}
	return all
})

// All returns every entry, in catalogue order.
func All() []Entry { return slices.Clone(entries()) }

// ForCommand returns the entries of one command, in order.
func ForCommand(command string) []Entry {
	var out []Entry
	for _, e := range entries() {
		if e.Command == command {
			out = append(out, e)
		}
	}
	return out
}

// Get returns the entry of id. An unknown id is a programming error.
func Get(id string) Entry {
	for _, e := range entries() {
		if e.ID == id {
			return e
		}
	}
	panic(fmt.Sprintf("catalogue: no check %q", id))
}

// CodeStrings lists the entry's codes.
func (e Entry) CodeStrings() []string {
	out := make([]string, 0, len(e.Codes))
	for _, c := range e.Codes {
		out = append(out, c.Code)
	}
	return out
}

// Declares tells whether code is one of the entry's codes.
func (e Entry) Declares(code string) bool {
	for _, c := range e.Codes {
		if c.Code == code {
			return true
		}
	}
	return false
}

// Check builds the engine check of entry id around run.
func Check(id string, run func(context.Context) engine.Outcome) engine.Check {
	e := Get(id)
	return engine.Check{
		ID: e.ID, Title: e.Title, Section: string(e.Section), Codes: e.CodeStrings(),
		DependsOn: append([]string(nil), e.DependsOn...), Timeout: e.Timeout, Run: run,
	}
}

// code builds a Code of id: code("LA101", "ZONE-EXTRA", "...") is LA101-ZONE-EXTRA.
func code(id, suffix, meaning string) Code {
	return Code{Code: id + "-" + suffix, Meaning: meaning}
}

// unread is the code of engine.Partial's note for checks that read part of their input.
func unread(id string) Code {
	return Code{Code: id + engine.UnreadSuffix, Meaning: "part of the input could not be read (RBAC or an API failure): the check says what it did not see"}
}

// IDs lists the IDs of entries.
func IDs(es []Entry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// pageIntro is what each command's catalogue page says before its tables.
var pageIntro = map[string]string{
	Doctor:      "The checks of `kubectl lanaccess doctor` ([the command](../doctor.md)), in the order they run.",
	VPNTraceCmd: "The checks of `kubectl lanaccess vpn-trace` ([the command](../vpn-trace.md)), in the order they run.",
	ClientCheck: "The checks of `kubectl lanaccess client-check` ([the command](../client-check.md)), in the order they run.",
}

// PagePath is the catalogue page of command, relative to the module root.
func PagePath(command string) string { return "docs/catalogue/" + command + ".md" }

// Page renders the catalogue page of one command (docs/catalogue/COMMAND.md): the checks and
// what each proves, then every finding code with its meaning. `make docs` writes it; a test
// fails when the page drifts from the catalogue.
func Page(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from the catalogue (checks/catalogue) by `make docs`: do not edit. -->\n# %s: the checks\n\n", command)
	b.WriteString(pageIntro[command])
	b.WriteString(" IDs and finding codes are stable: use them with `--only`/`--skip`, in CI and in docs.\n\n")
	es := ForCommand(command)
	b.WriteString("| ID | Section | What it proves |\n|----|---------|----------------|\n")
	for _, e := range es {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", e.ID, e.Section, e.Proves)
	}
	ns := NotStarted(command)
	fmt.Fprintf(&b, "\nBefore the checks, **%s** (section %s), *%s*: %s.\n", ns.ID, ns.Section, ns.Title, ns.Proves)
	b.WriteString(readsSection(ns, es))
	b.WriteString("\n## Finding codes\n\nSilence one known finding with `--skip CODE`.\n\n")
	b.WriteString("| Code | Meaning |\n|------|---------|\n")
	for _, e := range es {
		for _, c := range e.Codes {
			if !strings.HasSuffix(c.Code, engine.MoreSuffix) {
				fmt.Fprintf(&b, "| %s | %s |\n", c.Code, c.Meaning)
			}
		}
	}
	fmt.Fprintf(&b, "| *ID*-MORE | any check: more than %d findings; the rest are counted, not shown |\n", engine.MaxFindings)
	b.WriteString(labSection(es))
	return b.String()
}

// Undeclared lists the findings of check id whose code is empty or not one of its codes (a
// test helper for the families: every finding carries a declared code).
func Undeclared(id string, fs []engine.Finding) []string {
	e := Get(id)
	var out []string
	for _, f := range fs {
		if f.Code == "" || !e.Declares(f.Code) {
			out = append(out, fmt.Sprintf("%q (%s: %s)", f.Code, f.Severity, f.Message))
		}
	}
	return out
}
