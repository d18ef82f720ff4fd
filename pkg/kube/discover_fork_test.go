package kube

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newForkTester is a discoverer with only what fork uses.
func newForkTester() *discoverer {
	s := &Setup{Partial: map[string]error{}, Installed: map[string]bool{}}
	return &discoverer{ctx: context.Background(), setup: s, partial: s.Partial, installed: s.Installed}
}

// waitFor fails the test instead of hanging when a step that should have run never does.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Errorf("%s never happened: the steps do not run concurrently", what)
	}
}

// The first step answers last: what is recorded and the thens' order are still those of the
// steps, as reading them one after the other would have left them.
func TestForkRecordsInTheOrderOfTheStepsWhateverOrderTheyAnswerIn(t *testing.T) {
	d := newForkTester()
	errFirst, errSecond := errors.New("first"), errors.New("second")
	secondDone := make(chan struct{})
	var order []string
	steps := []step{
		{read: func(f *discoverer) error {
			waitFor(t, secondDone, "the second step")
			f.partial["pods in kube-system"] = errFirst
			f.installed["middlewares.traefik.io"] = true
			return nil
		}, then: func() error { order = append(order, "first"); return nil }},
		{read: func(f *discoverer) error {
			defer close(secondDone)
			f.partial["pods in kube-system"] = errSecond
			f.installed["middlewares.traefik.io"] = false
			return nil
		}, then: func() error { order = append(order, "second"); return nil }},
		{then: func() error { order = append(order, "third"); return nil }},
	}
	require.NoError(t, d.fork(steps...))
	assert.Equal(t, []string{"first", "second", "third"}, order)
	assert.Equal(t, errSecond, d.setup.Partial["pods in kube-system"], "the later step's record wins, as when it read last")
	assert.False(t, d.setup.Installed["middlewares.traefik.io"])
}

// Two steps fail; the second fails first. The error is the first step's, as sequential reads
// would have returned, and no then after it runs.
func TestForkReturnsTheFirstErrorInTheOrderOfTheSteps(t *testing.T) {
	for range 20 {
		d := newForkTester()
		errFirst, errSecond := errors.New("list nodes: internal error"), errors.New("list poddisruptionbudgets: internal error")
		secondDone := make(chan struct{})
		ran := false
		err := d.fork(
			step{read: func(*discoverer) error { waitFor(t, secondDone, "the second step"); return errFirst }},
			step{read: func(*discoverer) error { close(secondDone); return errSecond }},
			step{read: func(*discoverer) error { return nil }, then: func() error { ran = true; return nil }},
		)
		require.ErrorIs(t, err, errFirst)
		assert.False(t, ran, "a then after the failed step does not run")
	}
}

// A then's error (a usage error decided from the reads before it) comes before the errors of
// the steps after it.
func TestForkAThenErrorComesBeforeLaterReadErrors(t *testing.T) {
	d := newForkTester()
	usage := &UsageError{Message: "2 zones"}
	err := d.fork(
		step{read: func(*discoverer) error { return nil }, then: func() error { return usage }},
		step{read: func(*discoverer) error { return errors.New("list nodes: refused") }},
	)
	assert.Same(t, usage, err)
}

// maxReads steps read at once, never more.
func TestForkReadsConcurrentlyWithinItsBound(t *testing.T) {
	d := newForkTester()
	var inFlight, most atomic.Int32
	var mu sync.Mutex
	started := 0
	allIn := make(chan struct{})
	steps := make([]step, 3*maxReads)
	for i := range steps {
		steps[i] = step{read: func(*discoverer) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			mu.Lock()
			started++
			if started == maxReads {
				close(allIn)
			}
			mu.Unlock()
			waitFor(t, allIn, "maxReads steps reading together")
			return nil
		}}
	}
	require.NoError(t, d.fork(steps...))
	assert.Equal(t, int32(maxReads), most.Load())
}

// A serial step (several requests one after another) is started before the others, whatever
// its place in the order; with one slot the steps start in that launch order.
func TestForkStartsSerialStepsFirst(t *testing.T) {
	d := newForkTester()
	var starts []string
	record := func(name string) func(*discoverer) error {
		return func(*discoverer) error { starts = append(starts, name); return nil }
	}
	steps := append(reads(record("a"), record("b")), step{read: record("serial"), serial: true}, step{read: record("c")})
	require.NoError(t, d.forkWithin(1, steps...))
	assert.Equal(t, []string{"serial", "a", "b", "c"}, starts)
}
