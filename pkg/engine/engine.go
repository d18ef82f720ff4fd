// Package engine runs an ordered catalogue of checks with dependencies, a deadline per check
// and explicit skip reasons. It knows nothing about Kubernetes or networks and never prints.
package engine

import (
	"context"
	"fmt"
	"time"
)

// Status is the verdict of one check. Unknown is never reported as pass or fail: a check that
// could not evaluate is StatusError, one that was not run is StatusSkip with a reason.
type Status string

const (
	StatusPass  Status = "pass"
	StatusWarn  Status = "warn"
	StatusFail  Status = "fail"
	StatusSkip  Status = "skip"
	StatusError Status = "error"
)

// Severity grades one finding. Info findings never change a check's status.
type Severity string

const (
	SeverityInfo Severity = "info"
	SeverityWarn Severity = "warn"
	SeverityFail Severity = "fail"
)

// Finding is one observation with the object it concerns, the evidence behind it and, where
// the user must act, a remediation they can paste (a command or YAML).
type Finding struct {
	// Code is the finding's stable code ("LA106-ADMISSION"), declared in the catalogue: users
	// silence exactly one known finding with --skip CODE, and docs can link to it.
	Code        string         `json:"code,omitempty"`
	Severity    Severity       `json:"severity"`
	Object      string         `json:"object,omitempty"`
	Message     string         `json:"message"`
	Evidence    map[string]any `json:"evidence,omitempty"`
	Remediation string         `json:"remediation,omitempty"`
}

// Outcome is what a check's Run returns. Err set means the check could not evaluate (ERROR);
// Skip set means it chose not to (SKIP, with Skip as the reason); otherwise the status is the
// worst severity among Findings (no finding or only info findings = PASS).
type Outcome struct {
	Findings []Finding
	Skip     string
	Err      error
}

// Check is one entry of a catalogue. Checks are values with their dependencies injected when
// they are built (see package checks); Run must honour ctx's deadline.
type Check struct {
	ID    string
	Title string
	// Section groups the check in reports ("DNS path"); Codes are the finding codes it may
	// emit. Both come from the catalogue (package checks/catalogue).
	Section   string
	Codes     []string
	DependsOn []string
	// Timeout bounds the whole check; zero means the runner's default.
	Timeout time.Duration
	Run     func(ctx context.Context) Outcome
	// Begin, when set, is called once when the run starts, for a selected check, before the
	// check waits for its dependencies or a slot. It must not block: it starts the slow work
	// whose answer nothing upstream gates (LA402's system-resolver lookup), so that its latency
	// runs beside the other checks instead of after them. ctx ends with the run.
	Begin func(ctx context.Context)
}

// Result is the recorded verdict of one check.
type Result struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Section  string        `json:"section,omitempty"`
	Status   Status        `json:"status"`
	Duration time.Duration `json:"-"`
	Reason   string        `json:"reason,omitempty"`
	Findings []Finding     `json:"findings"`
	// Suppressed counts the findings silenced by --skip CODE, by code: they are left out of
	// Findings and of the status, and said so in the report.
	Suppressed map[string]int `json:"suppressed,omitempty"`
}

// Summary counts results by status.
type Summary struct {
	Pass  int `json:"pass"`
	Warn  int `json:"warn"`
	Fail  int `json:"fail"`
	Skip  int `json:"skip"`
	Error int `json:"error"`
}

// Summarize counts the statuses of results.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Status {
		case StatusPass:
			s.Pass++
		case StatusWarn:
			s.Warn++
		case StatusFail:
			s.Fail++
		case StatusSkip:
			s.Skip++
		case StatusError:
			s.Error++
		}
	}
	return s
}

// StatusOf derives a check's status from its outcome.
func StatusOf(o Outcome) (Status, string) {
	switch {
	case o.Err != nil:
		return StatusError, o.Err.Error()
	case o.Skip != "":
		return StatusSkip, o.Skip
	}
	st := StatusPass
	for _, f := range o.Findings {
		switch f.Severity {
		case SeverityFail:
			return StatusFail, ""
		case SeverityWarn:
			st = StatusWarn
		}
	}
	return st, ""
}

// UnreadSuffix makes the code of Partial's note ("LA102-UNREAD").
const UnreadSuffix = "-UNREAD"

// MoreSuffix makes the code of the note that replaces the findings past MaxFindings
// ("LA104-MORE").
const MoreSuffix = "-MORE"

// MaxFindings bounds the findings one check reports: a hostile or huge input (a Corefile of a
// thousand unknown directives) must not make a report of megabytes. The most severe are kept.
const MaxFindings = 50

// capFindings keeps at most MaxFindings findings, the most severe first (in their order), and
// says how many more there were.
func capFindings(id string, fs []Finding) []Finding {
	if len(fs) <= MaxFindings {
		return fs
	}
	rank := map[Severity]int{SeverityFail: 0, SeverityWarn: 1, SeverityInfo: 2}
	keep := make([]bool, len(fs))
	kept := 0
	for r := 0; r <= 2 && kept < MaxFindings-1; r++ {
		for i, f := range fs {
			if rank[f.Severity] == r && kept < MaxFindings-1 {
				keep[i] = true
				kept++
			}
		}
	}
	out := make([]Finding, 0, MaxFindings)
	counts := map[Severity]int{}
	for i, f := range fs {
		if keep[i] {
			out = append(out, f)
		} else {
			counts[f.Severity]++
		}
	}
	return append(out, Finding{Code: id + MoreSuffix, Severity: SeverityInfo,
		Message:  fmt.Sprintf("... %d more findings not shown (%d fail, %d warn, %d info)", len(fs)-kept, counts[SeverityFail], counts[SeverityWarn], counts[SeverityInfo]),
		Evidence: map[string]any{"shown": kept, "total": len(fs)}})
}

// Partial keeps what a check found when part of its input could not be read: known problems
// are reported as they are, and a check that found nothing wrong is SKIP with the reason
// rather than PASS, because the unread part may hide a problem. unread "" = all was read.
// The note about the unread part carries the code id+UnreadSuffix.
func Partial(id string, findings []Finding, unread string) Outcome {
	if unread == "" {
		return Outcome{Findings: findings}
	}
	for _, f := range findings {
		if f.Severity != SeverityInfo {
			return Outcome{Findings: append(findings, Finding{Code: id + UnreadSuffix, Severity: SeverityInfo, Message: "not everything was checked: " + unread})}
		}
	}
	return Outcome{Findings: findings, Skip: unread}
}

// HasSeverity reports whether some finding has severity sev.
func HasSeverity(fs []Finding, sev Severity) bool {
	for _, f := range fs {
		if f.Severity == sev {
			return true
		}
	}
	return false
}

// WithSeverity returns the findings of severity sev.
func WithSeverity(fs []Finding, sev Severity) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity == sev {
			out = append(out, f)
		}
	}
	return out
}
