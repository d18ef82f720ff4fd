// Package engine runs an ordered catalogue of checks with dependencies, a deadline per check
// and explicit skip reasons. It knows nothing about Kubernetes or networks and never prints.
package engine

import (
	"context"
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
	ID        string
	Title     string
	DependsOn []string
	// Timeout bounds the whole check; zero means the runner's default.
	Timeout time.Duration
	Run     func(ctx context.Context) Outcome
}

// Result is the recorded verdict of one check.
type Result struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Status   Status        `json:"status"`
	Duration time.Duration `json:"-"`
	Reason   string        `json:"reason,omitempty"`
	Findings []Finding     `json:"findings"`
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
