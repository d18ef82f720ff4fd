package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func sampleReport() Report {
	return Report{
		Command: "doctor",
		Cluster: Cluster{Context: "lab", Server: "https://10.0.10.1:6443"},
		Subject: []KV{{"proxy", "Service traefik/traefik"}, {"dns", "Service lan-dns/lan-dns"}, {"zone", "apps.example.com."}},
		Results: []engine.Result{
			{ID: "LA001", Section: "Configuration", Title: "API reachable and permissions granted", Status: engine.StatusPass, Duration: 12 * time.Millisecond, Findings: []engine.Finding{}},
			{ID: "LA101", Section: "Configuration", Title: "The three address lists agree", Status: engine.StatusFail, Duration: 3 * time.Millisecond, Findings: []engine.Finding{{
				Code: "LA101-ZONE-MISSING", Severity: engine.SeverityFail, Object: "ConfigMap lan-dns/lan-dns",
				Message:     "the zone answers 2 addresses, the Services carry 3",
				Evidence:    map[string]any{"zone": []string{"10.0.10.11", "10.0.10.12"}, "proxy": []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}},
				Remediation: "kubectl -n lan-dns edit configmap lan-dns\n# add: answer \"{{ .Name }} 60 IN A 10.0.10.13\"",
			}}},
			{ID: "LA105", Section: "Configuration", Title: "DNS Deployment is highly available", Status: engine.StatusWarn, Duration: 2 * time.Millisecond, Suppressed: map[string]int{"LA105-ROOT": 1}, Findings: []engine.Finding{{
				Code: "LA105-NO-PDB", Severity: engine.SeverityWarn, Object: "Deployment lan-dns/lan-dns", Message: "no PodDisruptionBudget keeps a replica during drains",
			}, {Code: "LA105-SPREAD", Severity: engine.SeverityInfo, Message: "2 replicas on 2 nodes"}}},
			{ID: "LA201", Section: "Node listeners", Title: "No host process on the Service ports", Status: engine.StatusSkip, Reason: "disabled by --no-helpers"},
			{ID: "LA301", Section: "DNS path", Title: "Every node answers the zone", Status: engine.StatusError, Duration: 2 * time.Second, Reason: "check deadline of 2s exceeded"},
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./pkg/report -update")
	assert.Equal(t, string(want), string(got))
}

func TestTextReportMatchesGoldenFile(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, sampleReport(), TextOptions{}))
	golden(t, "report.txt", buf.Bytes())
	assert.Contains(t, buf.String(), "1 passed, 1 warned, 1 failed, 1 skipped, 1 errors\n")
}

func TestTextReportHasNoColourUnlessAsked(t *testing.T) {
	var plain, coloured bytes.Buffer
	require.NoError(t, WriteText(&plain, sampleReport(), TextOptions{}))
	require.NoError(t, WriteText(&coloured, sampleReport(), TextOptions{Color: true}))
	assert.NotContains(t, plain.String(), "\x1b[")
	assert.Contains(t, coloured.String(), "\x1b[")
}

func TestVerboseTextShowsInfoFindings(t *testing.T) {
	var quiet, verbose bytes.Buffer
	require.NoError(t, WriteText(&quiet, sampleReport(), TextOptions{}))
	require.NoError(t, WriteText(&verbose, sampleReport(), TextOptions{Verbose: true}))
	assert.NotContains(t, quiet.String(), "2 replicas on 2 nodes")
	assert.Contains(t, verbose.String(), "2 replicas on 2 nodes")
}

func TestJSONReportFollowsTheContract(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, sampleReport()))
	golden(t, "report.json", buf.Bytes())

	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	assert.EqualValues(t, 1, doc["schemaVersion"])
	assert.Equal(t, "doctor", doc["command"])
	assert.Equal(t, map[string]any{"context": "lab", "server": "https://10.0.10.1:6443"}, doc["cluster"])
	assert.Equal(t, map[string]any{"pass": 1.0, "warn": 1.0, "fail": 1.0, "skip": 1.0, "error": 1.0}, doc["summary"])
	checks := doc["checks"].([]any)
	require.Len(t, checks, 5)
	first := checks[1].(map[string]any)
	for _, key := range []string{"id", "title", "status", "durationMs", "findings"} {
		assert.Contains(t, first, key)
	}
	finding := first["findings"].([]any)[0].(map[string]any)
	for _, key := range []string{"severity", "object", "message", "evidence", "remediation"} {
		assert.Contains(t, finding, key)
	}
	assert.Equal(t, "skip", checks[3].(map[string]any)["status"])
	assert.Equal(t, "disabled by --no-helpers", checks[3].(map[string]any)["reason"])
}

func TestJUnitReportRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, sampleReport()))
	golden(t, "report.xml", buf.Bytes())

	var doc junitSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc))
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	assert.Equal(t, 5, s.Tests)
	assert.Equal(t, 1, s.Failures, "a warning is not a failure by default")
	assert.Equal(t, 1, s.Errors)
	assert.Equal(t, 1, s.Skipped)
	require.NotNil(t, s.Cases[1].Failure)
	assert.Contains(t, s.Cases[1].Failure.Message, "ConfigMap lan-dns/lan-dns")
	assert.Contains(t, s.Cases[1].Failure.Body, "fix: kubectl -n lan-dns edit configmap lan-dns")
}

func TestJUnitCountsWarningsAsFailuresWithFailOnWarn(t *testing.T) {
	r := sampleReport()
	r.FailOnWarn = true
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, r))
	var doc junitSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, 2, doc.Suites[0].Failures)
}

func TestProgressWritesNothingWhenDisabled(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false)
	p.Observe(engine.Event{Check: engine.Check{ID: "LA001"}, Started: true, Total: 2})
	p.Clear()
	assert.Empty(t, buf.String())

	on := NewProgress(&buf, true)
	on.Observe(engine.Event{Check: engine.Check{ID: "LA001"}, Started: true, Total: 2})
	assert.Contains(t, buf.String(), "running LA001")
}

func TestTextWrapsFindingsButNeverRemediations(t *testing.T) {
	r := sampleReport()
	long := "kubectl -n lan-dns patch service lan-dns --type=merge -p '{\"spec\":{\"externalIPs\":[\"10.0.10.11\",\"10.0.10.12\",\"10.0.10.13\"]}}'"
	r.Results[1].Findings[0].Message = strings.Repeat("the zone answers two addresses while the Services carry three, ", 4)
	r.Results[1].Findings[0].Remediation = long
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, r, TextOptions{Width: 80, Verbose: true}))
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(line, "kubectl -n lan-dns patch") {
			assert.Contains(t, line, long, "a command stays on one line, whole")
			continue
		}
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%q", line)
	}
	var flat bytes.Buffer
	require.NoError(t, WriteText(&flat, r, TextOptions{}))
	assert.Contains(t, flat.String(), r.Results[1].Findings[0].Message, "width 0 does not wrap")
}

// The progress line is measured in display width, not bytes: "…" (3 bytes) is one column, so
// the padding that erases a longer previous line is exact, and a terminal of 30 columns gets
// lines of at most 29.
func TestProgressMeasuresDisplayWidthAndCutsToTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		columns int
		lines   []string
		want    string
	}{
		{"padding in columns", 0, []string{"reading the cluster…", "ok…"}, "\rreading the cluster…\rok…" + strings.Repeat(" ", 17)},
		{"cut to the terminal", 12, []string{"discovering the setup…"}, "\rdiscoverin…"},
		{"wide characters", 6, []string{"設定を読む"}, "\r設定…"},
		{"short lines are whole", 80, []string{"checking…"}, "\rchecking…"},
	} {
		var buf bytes.Buffer
		p := NewProgress(&buf, true).WithColumns(tc.columns)
		for _, l := range tc.lines {
			p.Message(l)
		}
		assert.Equal(t, tc.want, buf.String(), tc.name)
		if tc.columns > 0 {
			assert.LessOrEqual(t, runewidth.StringWidth(strings.TrimPrefix(buf.String(), "\r")), tc.columns-1, tc.name)
		}
	}
}
