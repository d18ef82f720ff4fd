package kube

import (
	"maps"

	"golang.org/x/sync/errgroup"
)

// maxReads bounds the steps of a fork that read at once: a discovery puts at most that many
// requests on the API server at a time. The client-side rate limit does not bound them: the
// plugin sets QPS 50 and burst 100 (cli's newClients), a bucket of 100 tokens that starts
// full, for discovery's ~30 reads. On the lab (2 CPUs shared with the API server) 16 ended
// the healthy discovery in 23-26 ms (medians of 30 runs), 8 in 25-28 ms, one read after
// another in 53-54 ms; on a loaded machine 16 kept its lead (22-27 ms against 31-49 ms); 32
// made each read slower (5-10 ms instead of 2-4) for no gain (docs/benchmarks.md, fifth
// round).
const maxReads = 16

// A step is one part of a fork. read, when set, runs concurrently with the other steps' reads,
// on a copy of the discoverer that records its failed and skipped reads (core, optional,
// outOfScope) apart from the others'; read may write only the fields of Setup no other step of
// the fork reads or writes. then, when set, runs once the reads of the steps before it are
// recorded and their thens have run, one step after the other on the discoverer itself: it
// puts what read found where several steps put theirs (a slice two reads append to, a map),
// or decides from what the steps before it found.
type step struct {
	read func(d *discoverer) error
	then func() error
	// serial: read makes requests one after another (each needs the answer before it), so it
	// is started before the other steps, whose single requests fill the remaining slots.
	serial bool
}

// coreList is a step of one LIST the setup depends on, whose refusal is recorded under key
// (core), and whose items took puts in place, in the fork's order; read says whether the LIST
// was answered.
func coreList[T any](key string, list func(d *discoverer) ([]T, error), took func(items []T, read bool) error) step {
	var items []T
	read := false
	return step{
		read: func(d *discoverer) error {
			var err error
			if items, err = list(d); err != nil {
				return d.core(key, err)
			}
			read = true
			return nil
		},
		then: func() error { return took(items, read) },
	}
}

// reads makes steps of read functions that need no then.
func reads(fns ...func(d *discoverer) error) []step {
	out := make([]step, len(fns))
	for i, fn := range fns {
		out[i] = step{read: fn}
	}
	return out
}

// fork runs the reads of steps concurrently, at most maxReads at once, and then, in the order
// of steps, records each step's failed and skipped reads in Setup and runs its then: the Setup
// is the one reading them one after the other would have made, whatever order the answers
// came in. The error is the first in that order (a read's, else its then's), the one the
// sequential reads would have returned; a failing step does not cancel the others (that would turn a read before it that
// was about to succeed into a "context canceled" and change which error is first), but a dead
// context ends every read at once (client-go checks it before and while each request).
func (d *discoverer) fork(steps ...step) error {
	return d.forkWithin(maxReads, steps...)
}

// forkWithin is fork with at most limit reads at once.
func (d *discoverer) forkWithin(limit int, steps ...step) error {
	forks := make([]*discoverer, len(steps))
	errs := make([]error, len(steps))
	var g errgroup.Group
	g.SetLimit(limit)
	start := func(i int) {
		f := *d
		f.partial, f.installed = map[string]error{}, map[string]bool{}
		forks[i] = &f
		if steps[i].read == nil {
			return
		}
		g.Go(func() error {
			errs[i] = steps[i].read(&f)
			return nil
		})
	}
	for i := range steps {
		if steps[i].serial {
			start(i)
		}
	}
	for i := range steps {
		if !steps[i].serial {
			start(i)
		}
	}
	_ = g.Wait() // the reads return nil to the group: errs holds their errors
	for i, f := range forks {
		maps.Copy(d.partial, f.partial)
		maps.Copy(d.installed, f.installed)
		if errs[i] != nil {
			return errs[i]
		}
		if then := steps[i].then; then != nil {
			if err := then(); err != nil {
				return err
			}
		}
	}
	return nil
}
