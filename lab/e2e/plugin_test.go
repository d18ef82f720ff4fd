//go:build lab

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The plugin runs as a user would: the real binary, on the LAN workstation of the lab (the
// laptop namespace, 10.0.10.50), whose resolv.conf points at the laptop's systemd-resolved
// (which asks the DNS server DHCP gave, the lab's "public" resolver, until client-config's
// commands add the zone's). Running it there keeps every packet inside the lab, including
// LA402's system-resolver lookup. The API server is reached by address (the kubeconfig's
// https://10.0.10.10:6443), so no lookup stands between the plugin and the cluster.

// result is one run of the plugin.
type result struct {
	Code    int
	Stdout  string
	Stderr  string
	Elapsed time.Duration
	Doc     report
	hasJSON bool
}

type report struct {
	SchemaVersion int            `json:"schemaVersion"`
	Command       string         `json:"command"`
	Summary       map[string]int `json:"summary"`
	Checks        []checkResult  `json:"checks"`
}

type checkResult struct {
	ID       string    `json:"id"`
	Status   string    `json:"status"`
	Reason   string    `json:"reason"`
	Findings []finding `json:"findings"`
}

type finding struct {
	Code        string         `json:"code"`
	Severity    string         `json:"severity"`
	Object      string         `json:"object"`
	Message     string         `json:"message"`
	Evidence    map[string]any `json:"evidence"`
	Remediation string         `json:"remediation"`
}

// runPlugin runs the plugin (built once by lanaccessBinary) in the laptop namespace against
// the lab with the admin kubeconfig (unless args carry another) and decodes -o json when asked.
func runPlugin(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A --kubeconfig in args comes after the lab's and wins (pflag keeps the last value).
	cmd := lanaccessCmd(t, ctx, lab.Laptop(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running the plugin: %v", err)
	}
	if containsArg(args, "json") {
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &r.Doc), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		r.hasJSON = true
	}
	return r
}

func containsArg(args []string, want string) bool {
	for _, a := range args {
		if a == want || strings.HasPrefix(a, want+"=") {
			return true
		}
	}
	return false
}

func (r result) check(t *testing.T, id string) checkResult {
	t.Helper()
	require.True(t, r.hasJSON, "run with -o json")
	for _, c := range r.Doc.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no %s in the report: %s", id, r.Stdout)
	return checkResult{}
}

// statusOf is "id=status" for every check, for failure messages.
func (r result) statuses() string {
	parts := make([]string, 0, len(r.Doc.Checks))
	for _, c := range r.Doc.Checks {
		parts = append(parts, c.ID+"="+c.Status)
	}
	return strings.Join(parts, " ")
}

// objects lists the Objects of the findings of a check with the given severity.
func (c checkResult) objects(severity string) []string {
	var out []string
	for _, f := range c.Findings {
		if f.Severity == severity {
			out = append(out, f.Object)
		}
	}
	return out
}

func (c checkResult) mentions(severity, text string) bool {
	for _, f := range c.Findings {
		if f.Severity == severity && (strings.Contains(f.Object, text) || strings.Contains(f.Message, text)) {
			return true
		}
	}
	return false
}

// doctor runs `doctor -o json` with the lab CA and the given extra flags. With
// LANACCESS_REPLAY_EVERY=1 (make test-lab) every run is also recorded, and its bundle replayed
// offline must give the same verdicts (issue 25): each broken variant a lab test makes is a
// replay test too (checkReplay, replay_test.go).
func doctor(t *testing.T, extra ...string) result {
	t.Helper()
	if containsArg(extra, "--record") || os.Getenv(replayEveryEnv) != "1" {
		return runPlugin(t, append([]string{"doctor", "-o", "json", "--ca-file", lab.CAFile}, extra...)...)
	}
	bundle := filepath.Join(t.TempDir(), "doctor.gz")
	args := append([]string{"doctor", "-o", "json", "--ca-file", lab.CAFile, "--record", bundle}, extra...)
	r := runPlugin(t, args...)
	checkReplay(t, "doctor", bundle, r)
	return r
}
