package probe

import (
	"context"
	"slices"
	"sync"
	"time"
)

// workerLinger is how long an idle worker waits for the next probe before it ends: long
// enough to carry a check's burst of probes from one to the next, short enough that no worker
// outlives the run by more than that.
const workerLinger = 20 * time.Millisecond

// workerPool runs probes on at most max worker goroutines, so at most max probes are in flight.
//
// The checks ask from one goroutine per address, which ends after a probe or two; a TLS
// handshake needs a deep stack, so a fresh goroutine grows its stack several times for each one
// (runtime.newstack: 6 ms of a 30-address doctor run's CPU on the lab, perf). A worker grows it
// once and carries it from probe to probe. The probe keeps the asker's context and deadline; a
// panic in it is raised again in the asker's goroutine.
//
// A worker that finishes a probe counts itself idle (or takes a queued probe) before it hands
// the outcome back, so the asker's next probe finds it: questions asked one after the other run
// on one worker. An idle worker an asker has counted on is promised the next hand-over and
// never ends before it; the others end after workerLinger.
type workerPool struct {
	max  int
	jobs chan *probeJob // hands a probe to an idle worker that was promised it

	mu    sync.Mutex
	alive int         // workers running
	idle  int         // idle workers no asker has counted on yet
	queue []*probeJob // probes waiting while every worker is busy, oldest first
}

// probeJob is one probe handed to a worker, and where its outcome goes.
type probeJob struct {
	ctx  context.Context //nolint:containedctx // the asker's context, carried to the worker that runs its probe
	fn   func(context.Context) error
	done chan probeDone
}

type probeDone struct {
	err      error
	panicked any
}

func newWorkerPool(maxWorkers int) *workerPool {
	return &workerPool{max: maxWorkers, jobs: make(chan *probeJob)}
}

// run runs probe on a worker and waits for its outcome. A context that ends while the probe
// waits for a worker returns its error, and the probe never runs.
func (p *workerPool) run(ctx context.Context, probe func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &probeJob{ctx: ctx, fn: probe, done: make(chan probeDone, 1)}
	p.mu.Lock()
	switch {
	case p.idle > 0:
		p.idle--
		p.mu.Unlock()
		p.jobs <- j // the worker counted on takes it at once (see wait)
	case p.alive < p.max:
		p.alive++
		p.mu.Unlock()
		go p.work(j)
	default:
		p.queue = append(p.queue, j)
		p.mu.Unlock()
		select {
		case d := <-j.done:
			return d.outcome()
		case <-ctx.Done():
			if p.unqueue(j) {
				return ctx.Err()
			}
			// A worker took it already: its probe sees the ended context and returns.
		}
	}
	return (<-j.done).outcome()
}

func (d probeDone) outcome() error {
	if d.panicked != nil {
		panic(d.panicked)
	}
	return d.err
}

// unqueue takes j out of the queue; false when a worker has taken it.
func (p *workerPool) unqueue(j *probeJob) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.queue, j)
	if i < 0 {
		return false
	}
	p.queue = slices.Delete(p.queue, i, i+1)
	return true
}

// popLocked takes the oldest queued probe, or nil.
func (p *workerPool) popLocked() *probeJob {
	if len(p.queue) == 0 {
		return nil
	}
	j := p.queue[0]
	p.queue = slices.Delete(p.queue, 0, 1)
	return j
}

// work runs j, then the probes queued or handed to it, until it has been idle for
// workerLinger or a probe panicked.
func (p *workerPool) work(j *probeJob) {
	t := time.NewTimer(workerLinger)
	defer t.Stop()
	for j != nil {
		d := runProbe(j)
		p.mu.Lock()
		next := p.popLocked()
		switch {
		case d.panicked != nil && next == nil:
			p.alive--
		case d.panicked == nil && next == nil:
			p.idle++
		}
		p.mu.Unlock()
		j.done <- d
		if d.panicked != nil {
			// This worker ends with the asker's panic; a queued probe gets a fresh worker in
			// its place (the count of workers is unchanged).
			if next != nil {
				go p.work(next)
			}
			return
		}
		if next == nil {
			next = p.wait(t)
		}
		j = next
	}
}

// wait waits, idle, for a probe handed over; nil when none came within workerLinger and no
// asker counted on this worker (it has then left the pool).
func (p *workerPool) wait(t *time.Timer) *probeJob {
	t.Reset(workerLinger)
	select {
	case j := <-p.jobs:
		return j
	case <-t.C:
	}
	p.mu.Lock()
	if p.idle > 0 {
		p.idle--
		p.alive--
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	// Every idle worker, this one included, is promised a probe: take one.
	return <-p.jobs
}

// runProbe runs one probe and returns its outcome, a panic included.
func runProbe(j *probeJob) (d probeDone) {
	defer func() {
		if r := recover(); r != nil {
			d = probeDone{panicked: r}
		}
	}()
	return probeDone{err: j.fn(j.ctx)}
}
