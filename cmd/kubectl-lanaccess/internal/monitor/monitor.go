// Package monitor is the watchman of the LAN path: it runs doctor's checks every interval from
// a machine on the LAN, serves what they found as Prometheus metrics, and logs one structured
// line each time a check or an address changes state. It judges nothing itself: the checks
// (through the engine) give the verdicts, and the probes they send are measured on their way
// (a recorder wrapped around each run's probe.Set).
package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// Round is one run's work as a Source prepares it: the checks, built around the prober the
// monitor hands in, and the path they walk (whose addresses and expected answers the metrics
// are about).
type Round struct {
	Checks  []engine.Check
	Path    netpath.Path
	Cleanup func()
}

// Source prepares each run: from flags (the same path every time) or from the cluster (the
// setup discovered again, so that a changed address is followed). An error means the run could
// not start.
type Source interface {
	Prepare(ctx context.Context, probes netpath.Prober) (Round, error)
}

// Config is the monitor's validated configuration.
type Config struct {
	// Interval is the time from the start of one run to the start of the next, each wait
	// jittered by up to Jitter (a fraction) either way, so that monitors started together drift
	// apart. A run that takes longer delays the next one: runs never overlap.
	Interval time.Duration
	Jitter   float64
	// RunTimeout bounds one run; probes and checks are bounded by their own timeouts within it.
	RunTimeout time.Duration
	// Probes builds each run's probe.Set (a new one per run: an address silent in one run is
	// asked again in the next).
	Probes probe.Config
	// Only and Skip select checks as in doctor (IDs, prefixes, finding codes).
	Only, Skip []string
	// MaxAddresses caps the addresses that carry per-address labels.
	MaxAddresses int
	// WebConfigFile is the Prometheus exporters' web configuration (TLS, basic auth, HTTP
	// headers: github.com/prometheus/exporter-toolkit docs/web-configuration.md); "" serves
	// plain HTTP without authentication.
	WebConfigFile string
	Log           *slog.Logger
	Version       version.Info
}

// DefaultMaxAddresses bounds per-address series: 30 addresses x 3 kinds x (histogram buckets +
// counters) stays in the low thousands.
const DefaultMaxAddresses = 64

// Monitor runs checks on a schedule and keeps their metrics.
type Monitor struct {
	cfg     Config
	src     Source
	metrics *metrics
	tracker *tracker
	started time.Time

	mu      sync.Mutex
	lastEnd time.Time
	runs    int
	lastErr error
}

// New validates cfg and builds a monitor; nothing runs until Run or RunOnce.
func New(cfg Config, src Source) (*Monitor, error) {
	switch {
	case cfg.Interval <= 0:
		return nil, errors.New("the interval must be positive")
	case cfg.RunTimeout <= 0:
		return nil, errors.New("the run timeout must be positive")
	case cfg.Jitter < 0 || cfg.Jitter >= 1:
		return nil, fmt.Errorf("jitter %.2f: a fraction of the interval in [0, 1)", cfg.Jitter)
	case cfg.MaxAddresses <= 0:
		return nil, errors.New("the address cap must be positive")
	}
	if err := cfg.Probes.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Monitor{cfg: cfg, src: src, metrics: newMetrics(cfg.Interval, cfg.Version), tracker: newTracker(cfg.Log), started: time.Now()}, nil
}

// RunOnce runs the checks once and records what they found. An error means the run could not
// start (the setup could not be read) or was interrupted by ctx; failing checks are not errors.
func (m *Monitor) RunOnce(ctx context.Context) error {
	start := time.Now()
	rd, err := m.run(ctx)
	end := time.Now()
	if ctx.Err() != nil {
		// Stopping: a run cut short says nothing about the LAN, and must not flip a state.
		return ctx.Err()
	}
	m.mu.Lock()
	m.runs++
	m.lastEnd, m.lastErr = end, err
	m.mu.Unlock()
	if err != nil {
		m.metrics.runFailed(end.Sub(start), end)
		m.cfg.Log.LogAttrs(ctx, slog.LevelError, "run failed", slog.String("error", clip(err.Error(), 1000)))
		return err
	}
	m.metrics.runDone(rd, end.Sub(start), end)
	m.tracker.update(ctx, rd)
	return nil
}

func (m *Monitor) run(parent context.Context) (*runData, error) {
	ctx, cancel := context.WithTimeout(parent, m.cfg.RunTimeout)
	defer cancel()
	set, err := probe.NewSet(m.cfg.Probes)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	rec := newRecorder(set)
	round, err := m.src.Prepare(ctx, rec)
	if round.Cleanup != nil {
		defer round.Cleanup()
	}
	if err != nil {
		return nil, err
	}
	rd := &runData{path: round.Path, all: pathAddrs(round.Path)}
	rd.labelled = rd.all
	if len(rd.labelled) > m.cfg.MaxAddresses {
		rd.labelled = rd.labelled[:m.cfg.MaxAddresses]
	}
	rec.watch(round.Path, rd.labelled)
	runner := &engine.Runner{Checks: round.Checks, Only: m.cfg.Only, Skip: m.cfg.Skip, Parallel: 4}
	rd.results = runner.Run(ctx)
	rd.obs = rec.observations()
	return rd, nil
}

// pathAddrs are the addresses of the path's DNS and HTTPS targets, sorted, once each.
func pathAddrs(p netpath.Path) []netip.Addr {
	set := map[netip.Addr]bool{}
	for _, t := range append(append([]netpath.Target(nil), p.DNS...), p.HTTPS...) {
		set[t.Addr.Addr()] = true
	}
	return sortedAddrs(set)
}

// Run runs the checks now and then every interval until ctx ends, one run at a time.
func (m *Monitor) Run(ctx context.Context) {
	for {
		start := time.Now()
		_ = m.RunOnce(ctx) // logged and counted by RunOnce
		if ctx.Err() != nil {
			return
		}
		wait := time.Until(start.Add(m.nextInterval()))
		if wait <= 0 {
			m.metrics.overruns.Inc()
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func (m *Monitor) nextInterval() time.Duration {
	j := (rand.Float64()*2 - 1) * m.cfg.Jitter //nolint:gosec // spreading schedules needs no secret
	return time.Duration(float64(m.cfg.Interval) * (1 + j))
}

// health says whether the loop is alive: a run ended within two intervals and a run timeout
// (or, before the first run, the monitor started within that time).
func (m *Monitor) health(now time.Time) (ok bool, runs int, last time.Time, lastErr error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ref := m.lastEnd
	if ref.IsZero() {
		ref = m.started
	}
	return now.Sub(ref) <= 2*m.cfg.Interval+m.cfg.RunTimeout, m.runs, m.lastEnd, m.lastErr
}
