package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Event tells an observer (the live progress display) that a check started or finished.
type Event struct {
	Check   Check
	Started bool
	Result  *Result // set when finished
	Index   int     // position in the catalogue
	Total   int
}

// Runner runs checks in catalogue order. A check starts once every check it depends on has
// finished; independent checks run concurrently up to Parallel, so a slow network check does
// not hold back the API checks. Results always come back in catalogue order.
type Runner struct {
	Checks []Check
	// Only and Skip select checks by ID (or ID prefix such as "LA3"). A dependency that is not
	// selected counts as satisfied: the user asked for that check alone. A Skip entry that is a
	// finding code ("LA106-ADMISSION") silences exactly the findings with that code: the check
	// runs and its status is computed without them.
	Only, Skip     []string
	DefaultTimeout time.Duration
	Parallel       int
	Observe        func(Event)
	// Now is injectable for deterministic durations in tests.
	Now func() time.Time
}

// Validate reports IDs in Only/Skip that name no check, so a typo is a usage error, not a
// silently empty run.
func (r *Runner) Validate() error {
	var unknown, codesInOnly []string
	for _, sel := range r.Only {
		if IsCode(sel) {
			codesInOnly = append(codesInOnly, sel)
		} else if !r.knownID(sel) {
			unknown = append(unknown, sel)
		}
	}
	for _, sel := range r.Skip {
		if (IsCode(sel) && !r.knownCode(sel)) || (!IsCode(sel) && !r.knownID(sel)) {
			unknown = append(unknown, sel)
		}
	}
	if len(codesInOnly) > 0 {
		return fmt.Errorf("--only takes check IDs, not finding codes (%s): silence one finding with --skip CODE", strings.Join(codesInOnly, ", "))
	}
	if len(unknown) > 0 {
		ids := make([]string, 0, len(r.Checks))
		for _, c := range r.Checks {
			ids = append(ids, c.ID)
		}
		return fmt.Errorf("unknown check ID or finding code %s (check IDs: %s; `kubectl lanaccess explain ID` lists each check's codes)", strings.Join(unknown, ", "), strings.Join(ids, ", "))
	}
	return nil
}

func (r *Runner) knownID(sel string) bool {
	for _, c := range r.Checks {
		if matches(sel, c.ID) {
			return true
		}
	}
	return false
}

func (r *Runner) knownCode(code string) bool {
	for _, c := range r.Checks {
		for _, k := range c.Codes {
			if strings.EqualFold(k, strings.TrimSpace(code)) {
				return true
			}
		}
	}
	return false
}

// IsCode tells a finding code ("LA106-ADMISSION") from a check ID or prefix ("LA106", "LA1").
func IsCode(sel string) bool {
	id, rest, ok := strings.Cut(strings.TrimSpace(sel), "-")
	return ok && rest != "" && id != ""
}

func matches(sel, id string) bool {
	sel = strings.ToUpper(strings.TrimSpace(sel))
	return sel != "" && !IsCode(sel) && strings.HasPrefix(id, sel)
}

// suppress removes the findings whose code --skip names, counting them by code.
func (r *Runner) suppress(fs []Finding) ([]Finding, map[string]int) {
	var counts map[string]int
	out := fs[:0:0]
	for _, f := range fs {
		if f.Code != "" && r.skipsCode(f.Code) {
			if counts == nil {
				counts = map[string]int{}
			}
			counts[f.Code]++
			continue
		}
		out = append(out, f)
	}
	return out, counts
}

func (r *Runner) skipsCode(code string) bool {
	for _, s := range r.Skip {
		if IsCode(s) && strings.EqualFold(strings.TrimSpace(s), code) {
			return true
		}
	}
	return false
}

func (r *Runner) selected(id string) (bool, string) {
	for _, s := range r.Skip {
		if matches(s, id) {
			return false, "disabled by --skip " + s
		}
	}
	if len(r.Only) == 0 {
		return true, ""
	}
	for _, s := range r.Only {
		if matches(s, id) {
			return true, ""
		}
	}
	return false, "not selected by --only " + strings.Join(r.Only, ",")
}

// Run executes the catalogue and returns one result per check, in catalogue order.
func (r *Runner) Run(ctx context.Context) []Result {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	par := r.Parallel
	if par <= 0 {
		par = 4
	}
	n := len(r.Checks)
	results := make([]Result, n)
	done := make([]chan struct{}, n)
	index := map[string]int{}
	for i, c := range r.Checks {
		done[i] = make(chan struct{})
		index[c.ID] = i
	}
	r.begin(ctx)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var obsMu sync.Mutex
	observe := func(e Event) {
		if r.Observe == nil {
			return
		}
		obsMu.Lock()
		defer obsMu.Unlock()
		e.Total = n
		r.Observe(e)
	}
	for i, c := range r.Checks {
		wg.Add(1)
		go func(i int, c Check) {
			defer wg.Done()
			defer close(done[i])
			res := Result{ID: c.ID, Title: c.Title, Section: c.Section, Findings: []Finding{}}
			finish := func() {
				results[i] = res
				observe(Event{Check: c, Result: &results[i], Index: i})
			}
			if ok, why := r.selected(c.ID); !ok {
				res.Status, res.Reason = StatusSkip, why
				results[i] = res // not observed: the user did not ask for it
				return
			}
			if why := r.waitDependencies(ctx, c, index, done, results); why != "" {
				res.Status, res.Reason = StatusSkip, why
				if ctx.Err() != nil {
					// Not run because the run ended (Ctrl-C, the run's deadline): unknown.
					res.Status = StatusError
				}
				finish()
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res.Status, res.Reason = StatusError, "interrupted before it started: "+Interruption(ctx).Error()
				finish()
				return
			}
			defer func() { <-sem }()
			observe(Event{Check: c, Started: true, Index: i})
			start := now()
			o := r.runOne(ctx, c)
			res.Duration = now().Sub(start)
			o.Findings, res.Suppressed = r.suppress(o.Findings)
			o.Findings = capFindings(c.ID, o.Findings)
			res.Status, res.Reason = StatusOf(o)
			if o.Findings != nil {
				res.Findings = o.Findings
			}
			finish()
		}(i, c)
	}
	wg.Wait()
	// Results of checks the user did not select are dropped from the report.
	out := results[:0:0]
	for _, res := range results {
		if ok, _ := r.selected(res.ID); ok {
			out = append(out, res)
		}
	}
	return out
}

// begin starts the selected checks' ungated slow work (Check.Begin) before any check waits.
func (r *Runner) begin(ctx context.Context) {
	for _, c := range r.Checks {
		if ok, _ := r.selected(c.ID); ok && c.Begin != nil {
			c.Begin(ctx)
		}
	}
}

func (r *Runner) waitDependencies(ctx context.Context, c Check, index map[string]int, done []chan struct{}, results []Result) string {
	deps := append([]string{}, c.DependsOn...)
	sort.Strings(deps)
	for _, d := range deps {
		j, ok := index[d]
		if !ok {
			continue // dependency not in this catalogue
		}
		if sel, _ := r.selected(d); !sel {
			continue
		}
		select {
		case <-done[j]:
		case <-ctx.Done():
			return "interrupted while waiting for " + d + ": " + Interruption(ctx).Error()
		}
		switch results[j].Status {
		case StatusFail, StatusError, StatusSkip:
			return fmt.Sprintf("upstream check %s %s", d, results[j].Status)
		}
	}
	return ""
}

// runOne applies the deadline and turns a panic or an overrun into an ERROR, never a hang.
func (r *Runner) runOne(ctx context.Context, c Check) (o Outcome) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = r.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ch := make(chan Outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- Outcome{Err: fmt.Errorf("internal error in %s: %v", c.ID, p)}
			}
		}()
		ch <- c.Run(cctx)
	}()
	select {
	case o = <-ch:
		if runDeadlinePassed(ctx) {
			// The outcome came at or after the run's deadline: what the check saw was cut by it
			// (a probe's dial bounded by the same instant says "no answer" a moment before the
			// context says why), so it did not finish in time and its verdict is unknown.
			<-ctx.Done() // the deadline has passed: the context ends now
			return Outcome{Err: fmt.Errorf("interrupted: %w", Interruption(ctx))}
		}
		switch {
		case o.Err != nil && ctx.Err() != nil && context.Cause(ctx) != ctx.Err():
			// The run ended for a named reason (its deadline): say it, with the check's error.
			o.Err = fmt.Errorf("%w (%w)", Interruption(ctx), o.Err)
		case o.Err != nil && errors.Is(o.Err, context.DeadlineExceeded) && cctx.Err() != nil && ctx.Err() == nil:
			o.Err = fmt.Errorf("check deadline of %s exceeded: %w", timeout, o.Err)
		}
		return o
	case <-cctx.Done():
		if ctx.Err() != nil {
			return Outcome{Err: fmt.Errorf("interrupted: %w", Interruption(ctx))}
		}
		return Outcome{Err: fmt.Errorf("check deadline of %s exceeded", timeout)}
	}
}

// runDeadlinePassed reports whether the run's own deadline (not a check's) has come.
func runDeadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// Interruption is why ctx ended: its cause when one was given (the run's deadline names
// itself), else its error (context canceled on Ctrl-C).
func Interruption(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return ctx.Err()
}
