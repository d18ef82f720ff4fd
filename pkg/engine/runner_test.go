package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func check(id string, deps []string, o Outcome) Check {
	return Check{ID: id, Title: "title " + id, DependsOn: deps, Run: func(context.Context) Outcome { return o }}
}

func statuses(rs []Result) map[string]Status {
	m := map[string]Status{}
	for _, r := range rs {
		m[r.ID] = r.Status
	}
	return m
}

func TestStatusComesFromTheWorstFinding(t *testing.T) {
	cases := []struct {
		name string
		o    Outcome
		want Status
	}{
		{"no finding passes", Outcome{}, StatusPass},
		{"info only passes", Outcome{Findings: []Finding{{Severity: SeverityInfo}}}, StatusPass},
		{"a warning warns", Outcome{Findings: []Finding{{Severity: SeverityInfo}, {Severity: SeverityWarn}}}, StatusWarn},
		{"a failure fails over warnings", Outcome{Findings: []Finding{{Severity: SeverityWarn}, {Severity: SeverityFail}}}, StatusFail},
		{"an error is never pass or fail", Outcome{Err: errors.New("boom"), Findings: []Finding{{Severity: SeverityFail}}}, StatusError},
		{"a skip carries its reason", Outcome{Skip: "not permitted"}, StatusSkip},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := StatusOf(c.o)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestFailedDependencySkipsDependentsWithTheReason(t *testing.T) {
	r := Runner{Checks: []Check{
		check("LA001", nil, Outcome{Findings: []Finding{{Severity: SeverityFail}}}),
		check("LA101", []string{"LA001"}, Outcome{}),
		check("LA102", nil, Outcome{}),
	}}
	res := r.Run(context.Background())
	require.Len(t, res, 3)
	assert.Equal(t, map[string]Status{"LA001": StatusFail, "LA101": StatusSkip, "LA102": StatusPass}, statuses(res))
	assert.Equal(t, "upstream check LA001 fail", res[1].Reason)
}

func TestWarningDependencyDoesNotSkip(t *testing.T) {
	r := Runner{Checks: []Check{
		check("A", nil, Outcome{Findings: []Finding{{Severity: SeverityWarn}}}),
		check("B", []string{"A"}, Outcome{}),
	}}
	assert.Equal(t, StatusPass, statuses(r.Run(context.Background()))["B"])
}

func TestOnlyAndSkipSelectByIDPrefix(t *testing.T) {
	mk := func() []Check {
		return []Check{check("LA001", nil, Outcome{}), check("LA301", nil, Outcome{}), check("LA302", nil, Outcome{}), check("LA401", nil, Outcome{})}
	}
	only := Runner{Checks: mk(), Only: []string{"la3"}}
	assert.Equal(t, map[string]Status{"LA301": StatusPass, "LA302": StatusPass}, statuses(only.Run(context.Background())))

	skip := Runner{Checks: mk(), Skip: []string{"LA302", "LA4"}}
	assert.Equal(t, map[string]Status{"LA001": StatusPass, "LA301": StatusPass}, statuses(skip.Run(context.Background())))
}

func TestUnknownSelectionIsAUsageError(t *testing.T) {
	r := Runner{Checks: []Check{check("LA001", nil, Outcome{})}, Only: []string{"LA999"}}
	err := r.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LA999")
	assert.Contains(t, err.Error(), "check IDs: LA001")
}

func TestCheckThatOverrunsItsDeadlineIsAnError(t *testing.T) {
	hang := Check{ID: "SLOW", Timeout: 50 * time.Millisecond, Run: func(_ context.Context) Outcome {
		time.Sleep(2 * time.Second) // ignores ctx on purpose
		return Outcome{}
	}}
	start := time.Now()
	res := (&Runner{Checks: []Check{hang}}).Run(context.Background())
	assert.Less(t, time.Since(start), time.Second)
	assert.Equal(t, StatusError, res[0].Status)
	assert.Contains(t, res[0].Reason, "deadline of 50ms exceeded")
}

func TestPanickingCheckIsAnErrorNotACrash(t *testing.T) {
	bad := Check{ID: "BAD", Run: func(context.Context) Outcome { panic("nil map") }}
	res := (&Runner{Checks: []Check{bad}}).Run(context.Background())
	assert.Equal(t, StatusError, res[0].Status)
	assert.Contains(t, res[0].Reason, "nil map")
}

func TestIndependentChecksRunConcurrently(t *testing.T) {
	var active, peak int32
	slow := func(id string) Check {
		return Check{ID: id, Run: func(context.Context) Outcome {
			n := atomic.AddInt32(&active, 1)
			for {
				p := atomic.LoadInt32(&peak)
				if n <= p || atomic.CompareAndSwapInt32(&peak, p, n) {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
			atomic.AddInt32(&active, -1)
			return Outcome{}
		}}
	}
	r := Runner{Checks: []Check{slow("A"), slow("B"), slow("C")}, Parallel: 3}
	res := r.Run(context.Background())
	assert.Len(t, res, 3)
	assert.EqualValues(t, 3, atomic.LoadInt32(&peak))
	assert.Equal(t, []string{"A", "B", "C"}, []string{res[0].ID, res[1].ID, res[2].ID}, "results keep catalogue order")
}

func TestCancelledRunReportsInterruptedChecks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := Check{ID: "BLOCK", Run: func(ctx context.Context) Outcome { <-ctx.Done(); return Outcome{Err: ctx.Err()} }}
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res := (&Runner{Checks: []Check{block}}).Run(ctx)
	assert.Equal(t, StatusError, res[0].Status)
	assert.Contains(t, res[0].Reason, "interrupted")
}

func TestObserverSeesStartAndFinish(t *testing.T) {
	var events []Event
	r := Runner{Checks: []Check{check("A", nil, Outcome{})}, Observe: func(e Event) { events = append(events, e) }}
	r.Run(context.Background())
	require.Len(t, events, 2)
	assert.True(t, events[0].Started)
	assert.Equal(t, StatusPass, events[1].Result.Status)
	assert.Equal(t, 1, events[1].Total)
}

func TestSkippingACodeSilencesExactlyThoseFindings(t *testing.T) {
	c := Check{ID: "LA106", Codes: []string{"LA106-ADMISSION", "LA106-INTERCEPTION", "LA106-DEPRECATED"}, Run: func(context.Context) Outcome {
		return Outcome{Findings: []Finding{
			{Code: "LA106-ADMISSION", Severity: SeverityWarn},
			{Code: "LA106-DEPRECATED", Severity: SeverityInfo},
		}}
	}}
	r := Runner{Checks: []Check{c}, Skip: []string{"la106-admission"}}
	require.NoError(t, r.Validate())
	res := r.Run(context.Background())
	require.Len(t, res, 1)
	assert.Equal(t, StatusPass, res[0].Status, "the only warning was silenced")
	assert.Equal(t, map[string]int{"LA106-ADMISSION": 1}, res[0].Suppressed)
	require.Len(t, res[0].Findings, 1)
	assert.Equal(t, "LA106-DEPRECATED", res[0].Findings[0].Code)

	other := Runner{Checks: []Check{c}, Skip: []string{"LA106-INTERCEPTION"}}
	res = other.Run(context.Background())
	assert.Equal(t, StatusWarn, res[0].Status, "silencing another code leaves this warning")
}

func TestSelectionsOfCodesAreValidated(t *testing.T) {
	c := Check{ID: "LA106", Codes: []string{"LA106-ADMISSION"}}
	for _, tc := range []struct {
		r    Runner
		want string
	}{
		{Runner{Checks: []Check{c}, Skip: []string{"LA106-NOPE"}}, "LA106-NOPE"},
		{Runner{Checks: []Check{c}, Only: []string{"LA106-ADMISSION"}}, "--only takes check IDs"},
	} {
		err := tc.r.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	ok := Runner{Checks: []Check{c}, Skip: []string{"LA106-ADMISSION"}}
	assert.NoError(t, ok.Validate())
}

func TestPartialKeepsProblemsAndSkipsAnEmptyVerdict(t *testing.T) {
	o := Partial("LA102", nil, "could not read pods")
	assert.Equal(t, "could not read pods", o.Skip)
	o = Partial("LA102", []Finding{{Code: "LA102-NO-POD", Severity: SeverityFail}}, "could not read endpointslices")
	assert.Empty(t, o.Skip)
	require.Len(t, o.Findings, 2)
	assert.Equal(t, "LA102-UNREAD", o.Findings[1].Code)
}

func TestFindingsPastTheCapAreCountedNotShownKeepingTheMostSevere(t *testing.T) {
	fs := make([]Finding, 0, 201)
	for range 200 {
		fs = append(fs, Finding{Code: "LA104-DIRECTIVE", Severity: SeverityInfo, Message: "unknown directive"})
	}
	fs = append(fs, Finding{Code: "LA104-SYNTAX", Severity: SeverityFail, Message: "the one that matters"})
	r := Runner{Checks: []Check{{ID: "LA104", Run: func(context.Context) Outcome { return Outcome{Findings: fs} }}}}
	res := r.Run(context.Background())
	require.Len(t, res[0].Findings, MaxFindings)
	assert.Equal(t, StatusFail, res[0].Status, "the failure is kept")
	assert.Equal(t, "LA104-SYNTAX", res[0].Findings[MaxFindings-2].Code, "kept, in its place")
	last := res[0].Findings[MaxFindings-1]
	assert.Equal(t, "LA104-MORE", last.Code)
	assert.Contains(t, last.Message, "152 more findings")
}

// Begin starts a check's slow, ungated work when the run starts: the work is in flight while
// the first checks still run (the slow check here waits for it inside a run of one slot, after
// the other check), and a check the user did not select begins nothing.
func TestBeginStartsSlowWorkBesideTheOtherChecks(t *testing.T) {
	begun := make(chan struct{})
	var skippedBegun atomic.Bool
	first := Check{ID: "A1", Run: func(ctx context.Context) Outcome {
		select { // A1 runs only while B1's work is already in flight
		case <-begun:
			return Outcome{}
		case <-ctx.Done():
			return Outcome{Err: errors.New("B1's work had not begun while A1 ran")}
		}
	}}
	slow := Check{ID: "B1", DependsOn: []string{"A1"},
		Begin: func(context.Context) { close(begun) },
		Run:   func(context.Context) Outcome { return Outcome{} }}
	skipped := Check{ID: "C1", Begin: func(context.Context) { skippedBegun.Store(true) }, Run: func(context.Context) Outcome { return Outcome{} }}
	r := &Runner{Checks: []Check{first, slow, skipped}, Skip: []string{"C1"}, Parallel: 1}
	st := statuses(r.Run(t.Context()))
	assert.Equal(t, StatusPass, st["A1"])
	assert.Equal(t, StatusPass, st["B1"])
	assert.False(t, skippedBegun.Load(), "a check left out by --skip began its work")
}

// A check whose outcome arrives once the run's deadline has passed did not finish in time: a
// probe cut by that deadline looks like silence ("no answer"), so the verdict is an ERROR naming
// the run's end, never the check's PASS or SKIP.
func TestAnOutcomeAfterTheRunsDeadlineIsAnError(t *testing.T) {
	ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, errors.New("the run's deadline"))
	defer cancel()
	late := Check{ID: "A1", Run: func(cctx context.Context) Outcome {
		<-cctx.Done()
		return Outcome{Skip: "the address did not answer: nothing to compare"}
	}}
	rs := (&Runner{Checks: []Check{late}}).Run(ctx)
	require.Len(t, rs, 1)
	assert.Equal(t, StatusError, rs[0].Status)
	assert.Contains(t, rs[0].Reason, "the run's deadline")
}
