package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
)

// The monitor runs as on a LAN machine: the real binary in the laptop namespace, without
// cluster access (--addresses, --zone: what a person on the LAN knows), listening on the
// laptop's LAN address so that the benchmark scrapes it over the LAN like a Prometheus would.

// MonitorSoak is the monitor after many runs at a short interval: what one run costs, and
// whether memory grows with the runs.
type MonitorSoak struct {
	Interval    time.Duration
	Early, Late int // runs counted at the two readings
	// CPUPerRun is process CPU (user + system) between the two readings over the runs between.
	CPUPerRun float64 // seconds
	// RunWall is the mean wall time of a run over the same runs.
	RunWall                 float64 // seconds
	EarlyRSSMB, LateRSSMB   float64
	EarlyHeapMB, LateHeapMB float64
	Wall                    time.Duration
}

// Growth is the late resident size over the early one.
func (s MonitorSoak) Growth() float64 {
	if s.EarlyRSSMB == 0 {
		return 0
	}
	return s.LateRSSMB / s.EarlyRSSMB
}

// MonitorScrape is the time to scrape /metrics once the monitor watches many addresses.
type MonitorScrape struct {
	Addresses int
	Scrape    Series // seconds
	Bytes     int
	Series    int // sample lines of one scrape
}

// monitorProc is one running monitor.
type monitorProc struct {
	cmd  *exec.Cmd
	url  string
	done chan error
	logs *syncbuf.Buffer
}

// startMonitor runs `monitor --addresses addrs` in the laptop namespace and waits for its start
// line, which names the port it bound.
func (b *Bench) startMonitor(ctx context.Context, interval time.Duration, addrs []string) (*monitorProc, error) {
	argv := []string{"ip", "netns", "exec", b.Layout.Laptop.NS, b.Plugin, "monitor",
		"--addresses", strings.Join(addrs, ","), "--zone", "apps.example.com", "--host", ZoneHost,
		"--ca-file", b.Layout.CAFile(), "--timeout", "2s", "--interval", interval.String(),
		"--listen", b.Layout.Laptop.LANIP + ":0"}
	p := &monitorProc{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan error, 1), logs: &syncbuf.Buffer{}} //nolint:gosec // the plugin under test, in the laptop namespace
	p.cmd.Env = cleanEnv()
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- p.cmd.Wait() }()
	err := poll(ctx, 30*time.Second, func() error {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("the monitor exited: %v\n%s", err, p.logs.String())
		default:
		}
		for line := range strings.SplitSeq(p.logs.String(), "\n") {
			var v struct{ Msg, Listen string }
			if json.Unmarshal([]byte(line), &v) == nil && v.Msg == "monitor started" {
				p.url = "http://" + v.Listen + "/metrics"
				return nil
			}
		}
		return errors.New("no start line yet")
	})
	if err != nil {
		return nil, errors.Join(err, p.stop())
	}
	return p, nil
}

// stop ends the monitor with SIGTERM, as systemd does; a monitor that does not stop within
// twenty seconds is killed and said so.
func (p *monitorProc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("the monitor exited with %v on SIGTERM\n%s", err, p.logs.String())
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		return errors.New("the monitor did not stop within 20s of SIGTERM")
	}
}

var scrapeClient = &http.Client{Timeout: 10 * time.Second}

// scrape fetches /metrics and parses it as Prometheus does.
func (p *monitorProc) scrape(ctx context.Context) (map[string]*dto.MetricFamily, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, body, fmt.Errorf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	return fams, body, err
}

// value is the value of the first series of name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	for _, m := range fams[name].GetMetric() {
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			return m.GetHistogram().GetSampleSum()
		}
	}
	return 0
}

// reading is the monitor's own account of itself at one moment.
type reading struct {
	runs, failedRuns, cpu, rss, heap, runSeconds float64
}

func readingOf(fams map[string]*dto.MetricFamily) reading {
	return reading{
		runs:       value(fams, "lanaccess_monitor_runs_total", map[string]string{"result": "ok"}),
		failedRuns: value(fams, "lanaccess_monitor_runs_total", map[string]string{"result": "error"}),
		cpu:        value(fams, "process_cpu_seconds_total", nil),
		rss:        value(fams, "process_resident_memory_bytes", nil),
		heap:       value(fams, "go_memstats_heap_inuse_bytes", nil),
		runSeconds: value(fams, "lanaccess_monitor_run_duration_seconds", nil),
	}
}

// waitRuns scrapes every two seconds until the monitor has completed n runs.
func (p *monitorProc) waitRuns(ctx context.Context, n int, within time.Duration) (reading, error) {
	var r reading
	err := poll(ctx, within, func() error {
		fams, _, err := p.scrape(ctx)
		if err != nil {
			return err
		}
		r = readingOf(fams)
		if r.failedRuns > 0 {
			return fmt.Errorf("%.0f runs could not start\n%s", r.failedRuns, p.logs.String())
		}
		if r.runs < float64(n) {
			return fmt.Errorf("%.0f of %d runs", r.runs, n)
		}
		return nil
	})
	return r, err
}

// MonitorSoak runs the monitor on the seed's addresses at interval until it has done runs runs,
// reading its CPU and memory after early runs and at the end. Every run must pass: the lab is
// healthy.
func (b *Bench) MonitorSoak(ctx context.Context, interval time.Duration, early, runs int) (MonitorSoak, error) {
	s := MonitorSoak{Interval: interval}
	b.Logf("monitor: %d runs at --interval %s from the laptop (no cluster access)", runs, interval)
	p, err := b.startMonitor(ctx, interval, b.seedAddrs())
	if err != nil {
		return s, err
	}
	start := time.Now()
	first, err := p.waitRuns(ctx, early, 5*time.Minute)
	if err != nil {
		return s, errors.Join(err, p.stop())
	}
	b.Logf("monitor: %.0f runs done; waiting for %d", first.runs, runs)
	last, err := p.waitRuns(ctx, runs, time.Duration(runs)*(interval+2*time.Second))
	s.Wall = time.Since(start)
	if err != nil {
		return s, errors.Join(err, p.stop())
	}
	fams, _, err := p.scrape(ctx)
	if err == nil {
		for _, f := range fams["lanaccess_check_status"].GetMetric() {
			for _, l := range f.GetLabel() {
				if l.GetName() == "status" && (l.GetValue() == "fail" || l.GetValue() == "error") && f.GetGauge().GetValue() == 1 {
					err = fmt.Errorf("a check fails on the healthy lab: %v", f.GetLabel())
				}
			}
		}
	}
	if serr := p.stop(); err == nil {
		err = serr
	}
	done := last.runs - first.runs
	s.Early, s.Late = int(first.runs), int(last.runs)
	s.CPUPerRun = (last.cpu - first.cpu) / done
	s.RunWall = (last.runSeconds - first.runSeconds) / done
	s.EarlyRSSMB, s.LateRSSMB = first.rss/(1<<20), last.rss/(1<<20)
	s.EarlyHeapMB, s.LateHeapMB = first.heap/(1<<20), last.heap/(1<<20)
	return s, err
}

// MonitorScrape times n scrapes of /metrics while the monitor watches addrs (after its first
// runs, so that every series exists).
func (b *Bench) MonitorScrape(ctx context.Context, addrs []string, n int) (MonitorScrape, error) {
	s := MonitorScrape{Addresses: len(addrs)}
	b.Logf("monitor: %d scrapes of /metrics with %d addresses", n, len(addrs))
	p, err := b.startMonitor(ctx, 5*time.Second, addrs)
	if err != nil {
		return s, err
	}
	if _, err := p.waitRuns(ctx, 2, 2*time.Minute); err != nil {
		return s, errors.Join(err, p.stop())
	}
	for range n {
		start := time.Now()
		fams, body, err := p.scrape(ctx)
		took := time.Since(start)
		if err != nil {
			return s, errors.Join(err, p.stop())
		}
		s.Scrape = append(s.Scrape, took.Seconds())
		s.Bytes = len(body)
		s.Series = 0
		for line := range strings.SplitSeq(string(body), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				s.Series++ // one sample line: a histogram is one per bucket, _sum and _count
			}
		}
		if got := len(fams["lanaccess_probe_success"].GetMetric()); got != 3*len(addrs) {
			return s, errors.Join(fmt.Errorf("%d probe_success series for %d addresses", got, len(addrs)), p.stop())
		}
	}
	return s, p.stop()
}
