package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// Zone facts of the lab the manual script needs (doctor discovers them).
const (
	ZoneHost    = "grafana.apps.example.com"
	OutsideName = "example.org"
)

// Bench holds what every scenario needs. Mutations of the lab go through Undo, which runs in
// reverse order on the way out, also after an error or Ctrl-C.
type Bench struct {
	Layout layout.Layout
	Client kubernetes.Interface
	Faults faults.Lab

	Plugin     string // the plugin binary (absolute path)
	Kubeconfig string // the audited ServiceAccount's kubeconfig doctor runs with
	Audit      *AuditTail
	Script     string // manual-check.sh, written out
	Runs       int
	Log        io.Writer
	Hold       bool // set the scenario up and wait for Ctrl-C instead of measuring
	// WithManyAddresses, when set, also measures something while the many-addresses scenario
	// holds its addresses (the monitor's scrape time).
	WithManyAddresses func(ctx context.Context, addrs []string) error

	undo []undoStep
}

type undoStep struct {
	what string
	fn   func(context.Context) error
}

// Defer records how to take back a change.
func (b *Bench) Defer(what string, fn func(context.Context) error) {
	b.undo = append(b.undo, undoStep{what, fn})
}

// UndoAll takes back every recorded change, newest first, each within its own deadline.
func (b *Bench) UndoAll() error {
	var errs []error
	for _, s := range slices.Backward(b.undo) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := s.fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", s.what, err))
		}
		cancel()
	}
	b.undo = nil
	return errors.Join(errs...)
}

// undoSince takes back the changes recorded after mark (one scenario's own changes).
func (b *Bench) undoSince(mark int) error {
	all := b.undo
	b.undo = all[mark:]
	err := b.UndoAll()
	b.undo = all[:mark]
	return err
}

func (b *Bench) Logf(format string, args ...any) {
	_, _ = fmt.Fprintf(b.Log, "[bench] "+format+"\n", args...) // progress log, best effort
}

// DoctorRun is one measured doctor run.
type DoctorRun struct {
	Sample
	API    APICounts
	Report doctorJSON
	// LabCPU is the CPU time the lab's processes used during the run (LabCPU).
	LabCPU time.Duration
}

type doctorJSON struct {
	Summary struct {
		Pass, Warn, Fail, Skip, Error int
	} `json:"summary"`
	Checks []struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		DurationMs int64  `json:"durationMs"`
		Findings   []struct {
			Severity string `json:"severity"`
			Object   string `json:"object"`
			Message  string `json:"message"`
		} `json:"findings"`
	} `json:"checks"`
}

// Slowest names the n slowest checks with their durations: "LA403 180ms, LA401 95ms".
func (d doctorJSON) Slowest(n int) string {
	c := append(d.Checks[:0:0], d.Checks...)
	sort.Slice(c, func(i, j int) bool { return c[i].DurationMs > c[j].DurationMs })
	var parts []string
	for i := 0; i < n && i < len(c); i++ {
		parts = append(parts, fmt.Sprintf("%s %dms", c[i].ID, c[i].DurationMs))
	}
	return strings.Join(parts, ", ")
}

// Explain is the failing findings, one per line, for an error message.
func (d doctorJSON) Explain() string {
	var b strings.Builder
	for _, c := range d.Checks {
		for _, f := range c.Findings {
			if f.Severity == "fail" || c.Status == "error" {
				fmt.Fprintf(&b, "%s %s: %s: %s\n", c.ID, c.Status, f.Object, f.Message)
			}
		}
	}
	return b.String()
}

// Failing lists the IDs of checks that failed or could not run (a skip is by design:
// --no-helpers skips the node socket read of LA201).
func (d doctorJSON) Failing() []string {
	var out []string
	for _, c := range d.Checks {
		if c.Status == "fail" || c.Status == "error" {
			out = append(out, c.ID+"="+c.Status)
		}
	}
	return out
}

// DoctorArgs is how the benchmark runs doctor: read-only (no helper pods), as the audited
// ServiceAccount, trusting the lab CA (as a workstation with the CA installed), JSON so that
// the verdict can be read back.
func (b *Bench) DoctorArgs(extra ...string) []string {
	return append([]string{b.Plugin, "doctor", "--no-helpers", "--kubeconfig", b.Kubeconfig, "--ca-file", b.Layout.CAFile(), "-o", "json"}, extra...)
}

// Doctor runs doctor from the lab's laptop (a workstation on the LAN) and reads back the
// API requests it made.
func (b *Bench) Doctor(ctx context.Context) (DoctorRun, error) {
	if err := b.Audit.Skip(); err != nil {
		return DoctorRun{}, err
	}
	labBefore := LabCPU(labBinCache())
	s, err := RunProcess(ctx, 2*time.Minute, b.Layout.Laptop.NS, cleanEnv(), b.DoctorArgs()...)
	if err != nil {
		return DoctorRun{}, fmt.Errorf("doctor: %w\n%s", err, s.Stderr)
	}
	run := DoctorRun{Sample: s, LabCPU: LabCPU(labBinCache()) - labBefore}
	if err := json.Unmarshal(s.Stdout, &run.Report); err != nil {
		return run, fmt.Errorf("doctor (exit %d) printed no JSON report: %w\n%s", s.Code, err, s.Stderr)
	}
	run.API, err = b.Audit.Settle(3 * time.Second)
	return run, err
}

// Manual runs the seed's manual check from the laptop against addrs.
func (b *Bench) Manual(ctx context.Context, addrs []string) (Sample, error) {
	argv := append([]string{"bash", b.Script, ZoneHost, OutsideName}, addrs...)
	s, err := RunProcess(ctx, 10*time.Minute, b.Layout.Laptop.NS, cleanEnv(), argv...)
	if err != nil {
		return s, fmt.Errorf("manual check: %w\n%s", err, s.Stdout)
	}
	return s, nil
}

// cleanEnv keeps the environment small and free of proxy variables: every request stays in
// the lab.
func cleanEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "NO_COLOR=1", "LANG=C"}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		env = append(env, "XDG_CACHE_HOME="+c)
	}
	return env
}

// WriteScript writes the embedded manual check into dir.
func WriteScript(dir string) (string, error) {
	p := filepath.Join(dir, "manual-check.sh")
	return p, os.WriteFile(p, manualScript, 0o700) //nolint:gosec // a script the benchmark runs: executable, its owner's only
}

func wantExit(what string, s Sample, codes ...int) error {
	if slices.Contains(codes, s.Code) {
		return nil
	}
	return fmt.Errorf("%s exited %d, want %v\nstdout:\n%s\nstderr:\n%s", what, s.Code, codes, clip(s.Stdout), clip(s.Stderr))
}

func clip(b []byte) string {
	s := string(b)
	if len(s) > 3000 {
		s = s[:3000] + "\n..."
	}
	return strings.TrimSpace(s)
}
