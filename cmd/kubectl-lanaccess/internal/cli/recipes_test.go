package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// recipeArgs is the plugin's argv of a recipe: the container's args of a Job, or the arguments
// of the workflow's `kubectl-lanaccess ...` step.
func recipeArgs(t *testing.T, name string) []string {
	t.Helper()
	raw, err := manifests.Get(name)
	require.NoError(t, err)
	if m := regexp.MustCompile(`(?m)^\s+args: (\[.*\])$`).FindSubmatch(raw); m != nil {
		var args []string
		require.NoError(t, json.Unmarshal(m[1], &args), "%s", m[1])
		return args
	}
	m := regexp.MustCompile(`(?m)^\s+run: kubectl-lanaccess ([^|]+)\|`).FindSubmatch(raw)
	require.NotNil(t, m, "%s runs no kubectl-lanaccess", name)
	return strings.Fields(string(m[1]))
}

// withoutWait drops --wait and its value: a replay judges one recorded attempt.
func withoutWait(args []string) []string {
	if i := slices.Index(args, "--wait"); i >= 0 {
		return slices.Delete(slices.Clone(args), i, i+2)
	}
	return args
}

// The vpn-trace recipes of the VPN's deploy, as their commands parse and run them: on the
// lab's recording of an OpenVPN pod with ip_forward=0 (testdata/replays), each fails (exit 1)
// with VPN002-OFF and its fix, and runs VPN001 and VPN002 only.
func TestTheVPNRecipesFailOnARecordedReplicaWithForwardingOff(t *testing.T) {
	bundle := filepath.Join(replaysDir, "lab-vpn-forwarding-off", "bundle.gz")
	for _, name := range []string{"job-vpn", "argocd-vpn", "github-actions-vpn"} {
		t.Run(name, func(t *testing.T) {
			args := recipeArgs(t, name)
			require.Equal(t, "vpn-trace", args[0])
			assert.Contains(t, strings.Join(args, " "), "--wait 3m")
			argv := append(withoutWait(args), "--replay", bundle)
			if !slices.Contains(argv, "-o") {
				argv = append(argv, "-o", "json")
			}
			argv[slices.Index(argv, "-o")+1] = "json"
			// The workflow's report files and the Job's termination log, in a directory of the
			// test's.
			dir := t.TempDir()
			for _, flag := range []string{"--junit-file", "--json-file", "--log-file"} {
				if i := slices.Index(argv, flag); i >= 0 {
					argv[i+1] = filepath.Join(dir, filepath.Base(argv[i+1]))
					defer func() { assert.FileExists(t, argv[i+1]) }()
				}
			}
			stdout, stderr, code := runRoot(t, neverConnect(t), argv...)
			assert.Equal(t, ExitFailed, code, "stderr: %s", stderr)
			if slices.Contains(args, "--log-file") {
				assert.Empty(t, stderr, "the Job's stderr goes to its termination message")
			}
			var doc struct {
				Checks []struct {
					ID, Status string
					Findings   []struct{ Code, Remediation string }
				}
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "stderr: %s", stderr)
			ids := make([]string, 0, len(doc.Checks))
			status := map[string]string{}
			var codes []string
			for _, c := range doc.Checks {
				ids = append(ids, c.ID)
				status[c.ID] = c.Status
				for _, f := range c.Findings {
					codes = append(codes, f.Code)
					if f.Code == "VPN002-OFF" {
						assert.Contains(t, f.Remediation, "net.ipv4.ip_forward=1")
					}
				}
			}
			assert.Equal(t, []string{"VPN001", "VPN002"}, ids)
			assert.Equal(t, "fail", status["VPN002"])
			assert.Contains(t, codes, "VPN002-OFF")
		})
	}
}

// --log-file takes --wait's attempts and the final error: stdout is the JSON report alone
// (what the Job's `kubectl logs` keeps), stderr is empty, and the file holds the attempts, or
// the error of a run that could not start.
func TestTheLogFileLeavesStdoutTheReportAlone(t *testing.T) {
	fails := engine.Check{ID: "VPN002", Title: "VPN002", Run: func(context.Context) engine.Outcome {
		return engine.Outcome{Findings: []engine.Finding{{Code: "VPN002-OFF", Severity: engine.SeverityFail, Message: "net.ipv4.ip_forward = 0"}}}
	}}
	log := filepath.Join(t.TempDir(), "termination-log")
	f := NewCheckFlags()
	f.Output, f.Wait, f.Interval, f.LogFile = "json", 500*time.Millisecond, 100*time.Millisecond, log
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	err := runChecks(t.Context(), streams, f, catalogue.VPNTraceCmd, stuckPreparer{checks: []engine.Check{fails}})
	assert.Equal(t, ExitFailed, ExitCode(err))
	assert.False(t, Printable(err))
	assert.Empty(t, errOut.String())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), "stdout is one JSON document:\n%s", out)
	assert.Equal(t, "vpn-trace", doc["command"])
	written, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(written), "attempt 1: still failing: VPN002=fail; retrying in 100ms\n")

	// A run that cannot start: the JSON report on stdout all the same, the error in the file,
	// which is rewritten, nothing on stderr (main prints nothing: Printable is false).
	out.Reset()
	f.Deadline = 100 * time.Millisecond
	err = runChecks(t.Context(), streams, f, catalogue.VPNTraceCmd, stuckPreparer{stuck: true})
	assert.Equal(t, ExitUnevaluated, ExitCode(err))
	assert.False(t, Printable(err))
	assert.Empty(t, errOut.String())
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), "stdout is one JSON document:\n%s", out)
	written, err = os.ReadFile(log)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^error: .*--deadline 100ms`, string(written))
	assert.NotContains(t, string(written), "attempt 1: still failing: VPN002", "rewritten for the run")
}
