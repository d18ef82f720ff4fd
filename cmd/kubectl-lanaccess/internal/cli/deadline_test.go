package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// stuckPreparer returns checks, or (stuck) waits for the run's end while reading the cluster.
type stuckPreparer struct {
	checks []engine.Check
	stuck  bool
}

func (p stuckPreparer) Prepare(ctx context.Context, _ *report.Progress) (attempt, error) {
	if p.stuck {
		<-ctx.Done()
		return attempt{}, ctx.Err()
	}
	return attempt{Checks: p.checks}, nil
}

// hangs is a check that would never finish on its own (an API server that does not answer).
func hangs(id string, deps ...string) engine.Check {
	return engine.Check{ID: id, Title: id, DependsOn: deps, Timeout: time.Hour, Run: func(ctx context.Context) engine.Outcome {
		<-ctx.Done()
		return engine.Outcome{Err: ctx.Err()}
	}}
}

// --deadline bounds the whole run: what finished is reported as it is, what had not is ERROR
// naming the deadline (a check running, one waiting for it), and the exit code is 3.
func TestTheDeadlineReportsWhatFinishedAndErrorsTheRest(t *testing.T) {
	f := NewCheckFlags()
	f.Output, f.Deadline = "json", 300*time.Millisecond
	finished := engine.Check{ID: "LA001", Title: "LA001", Run: func(context.Context) engine.Outcome {
		return engine.Outcome{Findings: []engine.Finding{{Severity: engine.SeverityInfo, Message: "done"}}}
	}}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	err := runChecks(t.Context(), streams, f, catalogue.Doctor, stuckPreparer{checks: []engine.Check{finished, hangs("LA101"), hangs("LA102", "LA101")}})
	assert.Equal(t, ExitUnevaluated, ExitCode(err))
	var rep struct {
		Checks []struct{ ID, Status, Reason string }
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	got := map[string][2]string{}
	for _, c := range rep.Checks {
		got[c.ID] = [2]string{c.Status, c.Reason}
	}
	assert.Equal(t, "pass", got["LA001"][0], "what finished is reported as it is")
	for _, id := range []string{"LA101", "LA102"} {
		assert.Equal(t, "error", got[id][0], id)
		assert.Contains(t, got[id][1], "--deadline 300ms", id)
	}
}

// A deadline that comes while the cluster is still being read ends the run with exit 3 and an
// error that names it.
func TestTheDeadlineBoundsReadingTheCluster(t *testing.T) {
	f := NewCheckFlags()
	f.Deadline = 100 * time.Millisecond
	streams := genericiooptions.NewTestIOStreamsDiscard()
	err := runChecks(t.Context(), streams, f, catalogue.VPNTraceCmd, stuckPreparer{stuck: true})
	assert.Equal(t, ExitUnevaluated, ExitCode(err))
	assert.ErrorContains(t, err, "--deadline 100ms")
}

// A deadline that is not a positive duration is a usage error before anything runs.
func TestABadDeadlineIsAUsageError(t *testing.T) {
	for _, v := range []string{"0s", "-1m", "soon"} {
		_, stderr, code := runReal(t, "vpn-trace", "--deadline", v, "--kubeconfig", kubeconfigFor(t, "https://127.0.0.1:1"))
		assert.Equal(t, ExitUsage, code, "--deadline %s: %s", v, stderr)
		assert.Contains(t, stderr, "deadline", v)
	}
}
