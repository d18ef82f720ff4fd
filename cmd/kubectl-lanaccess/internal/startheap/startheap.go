// Package startheap lets a one-shot command run without the garbage collections a small
// starting heap forces on it, as the Go compiler does (Go 1.26, cmd/compile/internal/base,
// startheap.go, AdjustStartingHeap; golang/go#56546).
//
// A healthy doctor keeps about 2 MB live and allocates about 10 MB in 100 ms; with GOGC=100 the
// runtime's 4 MB first goal makes that three collections, about a tenth of the run's CPU
// (issue 27: perf on the lab, 46 -> 38-41 ms of CPU per run with GOGC=400, peak RSS unchanged at
// 40 MB, which is the binary's pages more than the heap). Raise sets GOGC to Percent until a
// collection leaves Live bytes or more live: from then on the heap is the cluster's size and
// GOGC is back to its value, so a large cluster's heap grows as it always did.
package startheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

const (
	// Percent is GOGC while the live heap is small.
	Percent = 400
	// Live is the live heap after a collection at which GOGC goes back: with Percent, the heap
	// goal is then at most 5 x 4 MiB = 20 MiB, against 8 MiB with GOGC=100.
	Live = 4 << 20
)

var (
	mu       sync.Mutex
	raised   bool
	previous int
)

// Raise sets GOGC to Percent until the live heap reaches Live, unless the environment sets
// GOGC or GOMEMLIMIT (the user's choice is kept).
func Raise() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if raised {
		return
	}
	raised = true
	previous = debug.SetGCPercent(Percent)
	afterEachGC(func() bool {
		if !Raised() {
			return false // restored by the command
		}
		if liveHeap() < Live {
			return true
		}
		Restore()
		return false
	})
}

// Restore puts GOGC back to its value before Raise (a long-running command, the monitor, keeps
// Go's default: its heap must stay small for days, not finish fast).
func Restore() {
	mu.Lock()
	defer mu.Unlock()
	if raised {
		debug.SetGCPercent(previous)
		raised = false
	}
}

// Raised reports whether GOGC is raised now.
func Raised() bool {
	mu.Lock()
	defer mu.Unlock()
	return raised
}

// afterEachGC calls fn after each collection until it returns false: a finalizer on an object
// that becomes garbage at once runs after the collection that finds it, and re-arms itself on
// a new one (cmd/compile's forEachGC).
func afterEachGC(fn func() bool) {
	type block [32]byte // large enough to avoid the tiny allocator, whose blocks outlive objects
	var finalizer func(*block)
	finalizer = func(*block) {
		if fn() {
			runtime.SetFinalizer(new(block), finalizer)
		}
	}
	runtime.SetFinalizer(new(block), finalizer)
}

// liveHeap is the heap the last collection left live (runtime/metrics, Go 1.21+).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
