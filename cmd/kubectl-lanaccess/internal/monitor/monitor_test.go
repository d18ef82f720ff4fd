package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/flagpath"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// pathSource is the flags' source: the same path every run, its DNS and HTTPS checks.
type pathSource struct{ path netpath.Path }

func (s pathSource) Prepare(_ context.Context, probes netpath.Prober) (Round, error) {
	env := &netpath.Env{Path: s.path, Probes: probes, Options: netpath.Options{ExpectStatus: 302, OutsideName: "example.org"}}
	return Round{Checks: checks.Doctor(checks.DoctorEnv{Path: env}), Path: s.path}, nil
}

func lanSource(t *testing.T, lan *probetest.LAN) pathSource {
	t.Helper()
	addrs, err := flagpath.ParseAddresses(lan.Addrs)
	require.NoError(t, err)
	return pathSource{path: flagpath.FromAddresses(addrs, zone.MustParse(probetest.LANZone), probetest.LANHost)}
}

// logLines collects the JSON log lines.
type logLines struct{ syncbuf.Buffer }

// with returns the decoded lines whose msg is msg and whose fields match want.
func (l *logLines) with(t *testing.T, msg string, want map[string]string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["msg"] != msg {
			continue
		}
		match := true
		for k, v := range want {
			match = match && m[k] == v
		}
		if match {
			out = append(out, m)
		}
	}
	return out
}

func newTestMonitor(t *testing.T, lan *probetest.LAN, src Source, tweak ...func(*Config)) (*Monitor, *logLines) {
	t.Helper()
	logs := &logLines{}
	cfg := Config{Interval: time.Second, RunTimeout: 20 * time.Second, Probes: lan.ProbeConfig(500 * time.Millisecond),
		MaxAddresses: DefaultMaxAddresses, Log: slog.New(slog.NewJSONHandler(logs, nil)), Version: version.Info{Version: "v0.0.0-test", Commit: "abc", Date: "now"}}
	for _, f := range tweak {
		f(&cfg)
	}
	m, err := New(cfg, src)
	require.NoError(t, err)
	return m, logs
}

// scrape reads /metrics as Prometheus does and parses it with prometheus/common's parser.
func scrape(t *testing.T, m *Monitor) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	return fams
}

// value is the value of the series of name whose labels include want; ok false when absent.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// labelValues lists the values of label across the series of name.
func labelValues(fams map[string]*dto.MetricFamily, name, label string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !seen[l.GetValue()] {
				seen[l.GetValue()] = true
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := value(fams, name, want)
	require.True(t, ok, "no %s%v", name, want)
	return v
}

func TestAHealthyRunServesEveryAddressKindAndCheck(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, _ := newTestMonitor(t, lan, lanSource(t, lan))
	require.NoError(t, m.RunOnce(t.Context()))
	fams := scrape(t, m)
	for _, a := range lan.Addrs {
		for _, k := range Kinds {
			assert.Equal(t, 1.0, mustValue(t, fams, mProbeSuccess, map[string]string{"address": a, "kind": string(k)}), "%s %s", a, k)
			assert.Positive(t, mustValue(t, fams, mProbeDuration, map[string]string{"address": a, "kind": string(k)}), "%s %s observed", a, k)
		}
		expiry := mustValue(t, fams, mCertExpiry, map[string]string{"address": a})
		assert.InDelta(t, float64(time.Now().Add(90*24*time.Hour).Unix()), expiry, 3600)
		assert.Equal(t, 0.0, mustValue(t, fams, mAnswersDrift, map[string]string{"address": a}))
		assert.Equal(t, 1.0, mustValue(t, fams, mHandshake, map[string]string{"address": a}), "one handshake per address per run")
	}
	assert.Equal(t, 1.0, mustValue(t, fams, mAnswerSets, nil))
	assert.Equal(t, 3.0, mustValue(t, fams, mExpectedAnswers, nil))
	for _, id := range []string{"LA301", "LA302", "LA303", "LA304", "LA401", "LA403"} {
		if id != "LA403" {
			assert.Equal(t, 1.0, mustValue(t, fams, mCheckStatus, map[string]string{"check": id, "status": "pass"}), id)
		}
		// LA403 compares the addresses' handshake times: on a loaded machine (the race
		// detector, parallel packages) one loopback address can really be 50 ms slower, and
		// its WARN is then right. It never fails.
		assert.Equal(t, 0.0, mustValue(t, fams, mCheckStatus, map[string]string{"check": id, "status": "fail"}), id)
	}
	assert.Equal(t, 1.0, mustValue(t, fams, mCheckInfo, map[string]string{"check": "LA301", "section": "DNS path"}))
	assert.Equal(t, 1.0, mustValue(t, fams, mRuns, map[string]string{"result": "ok"}))
	assert.Equal(t, 1.0, mustValue(t, fams, mLastRunSuccess, nil))
	assert.Equal(t, 1.0, mustValue(t, fams, mBuildInfo, map[string]string{"version": "v0.0.0-test", "commit": "abc"}))
	assert.InDelta(t, float64(time.Now().Unix()), mustValue(t, fams, mLastRun, nil), 5)
	_, ok := value(fams, "process_resident_memory_bytes", nil)
	assert.True(t, ok, "the process collector is served")
	for _, name := range MetricNames() {
		if name == mUnlabelled || name == mOverruns {
			continue // served, zero, or only once something overflows
		}
		assert.Contains(t, fams, name)
	}
}

func TestACutAddressFlipsToZeroWithOneLogLineNamingItAndBack(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, logs := newTestMonitor(t, lan, lanSource(t, lan))
	require.NoError(t, m.RunOnce(t.Context()))
	assert.Empty(t, logs.with(t, "address state changed", nil), "a healthy first run logs no address change")

	lan.Cut("10.0.10.12")
	require.NoError(t, m.RunOnce(t.Context()))
	require.NoError(t, m.RunOnce(t.Context()))
	fams := scrape(t, m)
	for _, k := range Kinds {
		assert.Equal(t, 0.0, mustValue(t, fams, mProbeSuccess, map[string]string{"address": "10.0.10.12", "kind": string(k)}), k)
		assert.Equal(t, 1.0, mustValue(t, fams, mProbeSuccess, map[string]string{"address": "10.0.10.11", "kind": string(k)}), k)
	}
	assert.Equal(t, 1.0, mustValue(t, fams, mCheckStatus, map[string]string{"check": "LA301", "status": "fail"}))
	down := logs.with(t, "address state changed", map[string]string{"address": "10.0.10.12", "to": "down"})
	require.Len(t, down, 1, "one line for the change, none while it holds")
	assert.Equal(t, "up", down[0]["from"])
	finding := down[0]["finding"].(map[string]any)
	assert.Contains(t, []any{"LA301-NO-ANSWER", "LA401-NO-ANSWER"}, finding["code"])
	assert.Contains(t, finding["message"], "10.0.10.12")
	probes := down[0]["probes"].(map[string]any)
	assert.Contains(t, probes[string(KindDNSUDP)], "no answer")
	assert.Len(t, logs.with(t, "address state changed", nil), 1, "no other address changed")
	assert.Len(t, logs.with(t, "check state changed", map[string]string{"check": "LA301", "from": "pass", "to": "fail"}), 1)

	lan.Restore("10.0.10.12")
	require.NoError(t, m.RunOnce(t.Context()))
	fams = scrape(t, m)
	for _, k := range Kinds {
		assert.Equal(t, 1.0, mustValue(t, fams, mProbeSuccess, map[string]string{"address": "10.0.10.12", "kind": string(k)}), k)
	}
	up := logs.with(t, "address state changed", map[string]string{"address": "10.0.10.12", "from": "down", "to": "up"})
	assert.Len(t, up, 1)
	assert.Nil(t, up[0]["finding"])
}

func TestAnAddressDroppedFromTheZoneShowsAsDrift(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, logs := newTestMonitor(t, lan, lanSource(t, lan))
	lan.SetAnswers("10.0.10.11", "10.0.10.12")
	require.NoError(t, m.RunOnce(t.Context()))
	fams := scrape(t, m)
	for _, a := range lan.Addrs {
		assert.Equal(t, 1.0, mustValue(t, fams, mAnswersDrift, map[string]string{"address": a}), a)
		assert.Equal(t, 1.0, mustValue(t, fams, mProbeSuccess, map[string]string{"address": a, "kind": string(KindDNSUDP)}), "the address answers: it is up")
	}
	assert.Equal(t, 1.0, mustValue(t, fams, mAnswerMissing, map[string]string{"answer": "10.0.10.13"}))
	assert.Equal(t, 0.0, mustValue(t, fams, mAnswerMissing, map[string]string{"answer": "10.0.10.11"}))
	assert.Equal(t, 1.0, mustValue(t, fams, mAnswerSets, nil), "every server gives the same (wrong) set")
	assert.Equal(t, 1.0, mustValue(t, fams, mCheckStatus, map[string]string{"check": "LA301", "status": "fail"}))
	line := logs.with(t, "check state changed", map[string]string{"check": "LA301", "from": "unknown", "to": "fail"})
	require.Len(t, line, 1)
	assert.Equal(t, "LA301-WRONG-ANSWER", line[0]["finding"].(map[string]any)["code"])
}

func TestServersThatDisagreeCountTwoAnswerSets(t *testing.T) {
	expected := []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12")}
	a, b := netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12")
	perServer, missing, sets := drift(expected, []answerObs{
		{server: a, addrs: expected},
		{server: b, addrs: []netip.Addr{a, netip.MustParseAddr("203.0.113.9")}},
	})
	assert.Equal(t, 2, sets)
	assert.Equal(t, map[netip.Addr]int{a: 0, b: 2}, perServer, "b lacks .12 and adds an address")
	assert.Equal(t, map[netip.Addr]bool{a: false, b: true}, missing, "the unexpected address is never a label")
}

func TestAddressesBeyondTheCapAreProbedButNotLabelled(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, logs := newTestMonitor(t, lan, lanSource(t, lan), func(c *Config) { c.MaxAddresses = 2 })
	require.NoError(t, m.RunOnce(t.Context()))
	fams := scrape(t, m)
	assert.ElementsMatch(t, []string{"10.0.10.11", "10.0.10.12"}, labelValues(fams, mProbeSuccess, "address"))
	assert.ElementsMatch(t, []string{"10.0.10.11", "10.0.10.12"}, labelValues(fams, mProbeDuration, "address"))
	assert.ElementsMatch(t, []string{"10.0.10.11", "10.0.10.12"}, labelValues(fams, mAnswerMissing, "answer"), "the expected answers are labelled within the cap too")
	assert.ElementsMatch(t, []string{"10.0.10.11", "10.0.10.12"}, labelValues(fams, mAnswersDrift, "address"))
	assert.Equal(t, 1.0, mustValue(t, fams, mUnlabelled, nil))
	assert.Equal(t, 3.0, mustValue(t, fams, mAddresses, nil))
	assert.Equal(t, 1.0, mustValue(t, fams, mCheckStatus, map[string]string{"check": "LA301", "status": "pass"}), "the checks judge every address")
	assert.Len(t, logs.with(t, "more addresses than --max-addresses: the checks judge them all, the per-address metrics carry the first ones only", nil), 1)
}

// changingSource gives the addresses of the current list each run (a DHCP change).
type changingSource struct {
	mu    sync.Mutex
	addrs []string
}

func (s *changingSource) Prepare(ctx context.Context, probes netpath.Prober) (Round, error) {
	s.mu.Lock()
	addrs, _ := flagpath.ParseAddresses(s.addrs)
	s.mu.Unlock()
	return pathSource{path: flagpath.FromAddresses(addrs, zone.MustParse(probetest.LANZone), probetest.LANHost)}.Prepare(ctx, probes)
}

func TestAnAddressThatLeavesThePathLosesItsSeries(t *testing.T) {
	lan := probetest.NewLAN(t)
	src := &changingSource{addrs: lan.Addrs}
	m, logs := newTestMonitor(t, lan, src)
	require.NoError(t, m.RunOnce(t.Context()))
	src.addrs = lan.Addrs[:2]
	lan.SetAnswers(lan.Addrs[:2]...)
	require.NoError(t, m.RunOnce(t.Context()))
	fams := scrape(t, m)
	for _, name := range []string{mProbeSuccess, mProbeDuration, mProbes, mHandshake, mCertExpiry} {
		assert.NotContains(t, labelValues(fams, name, "address"), "10.0.10.13", name)
	}
	changed := logs.with(t, "addresses changed", nil)
	require.Len(t, changed, 1)
	assert.Equal(t, []any{"10.0.10.13"}, changed[0]["removed"])
}

type failingSource struct{}

func (failingSource) Prepare(context.Context, netpath.Prober) (Round, error) {
	return Round{}, errors.New("could not read the cluster at https://10.0.10.10:6443: connection refused")
}

func TestARunThatCannotStartIsCountedAndLogged(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, logs := newTestMonitor(t, lan, failingSource{})
	require.Error(t, m.RunOnce(t.Context()))
	fams := scrape(t, m)
	assert.Equal(t, 1.0, mustValue(t, fams, mRuns, map[string]string{"result": "error"}))
	assert.Equal(t, 0.0, mustValue(t, fams, mLastRunSuccess, nil))
	lines := logs.with(t, "run failed", nil)
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0]["error"], "connection refused")
}

// slowSource takes a while to prepare and counts how many runs are in flight at once.
type slowSource struct {
	inner          Source
	delay          time.Duration
	inFlight, most atomic.Int32
	prepared       atomic.Int32
}

func (s *slowSource) Prepare(ctx context.Context, probes netpath.Prober) (Round, error) {
	n := s.inFlight.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	s.prepared.Add(1)
	time.Sleep(s.delay)
	r, err := s.inner.Prepare(ctx, probes)
	prev := r.Cleanup
	r.Cleanup = func() {
		if prev != nil {
			prev()
		}
		s.inFlight.Add(-1)
	}
	return r, err
}

func TestRunsNeverOverlapAndAnOverrunIsCounted(t *testing.T) {
	lan := probetest.NewLAN(t)
	src := &slowSource{inner: lanSource(t, lan), delay: 60 * time.Millisecond}
	m, _ := newTestMonitor(t, lan, src, func(c *Config) { c.Interval = 10 * time.Millisecond })
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	m.Run(ctx)
	assert.GreaterOrEqual(t, src.prepared.Load(), int32(3))
	assert.Equal(t, int32(1), src.most.Load(), "never two runs at once")
	fams := scrape(t, m)
	assert.Positive(t, mustValue(t, fams, mOverruns, nil), "every run outlasts a 10ms interval")
}

func TestServeStopsGracefullyWhenItsContextEnds(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, _ := newTestMonitor(t, lan, lanSource(t, lan), func(c *Config) { c.Interval = time.Hour })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), mProbeSuccess)
	}, 10*time.Second, 50*time.Millisecond, "the first run is served")
	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	var health map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", health["status"])
	assert.Equal(t, 1.0, health["runs"])

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the listener is closed")
}

func TestHealthzTurnsUnavailableWhenRunsStall(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, _ := newTestMonitor(t, lan, lanSource(t, lan))
	ok, _, _, _ := m.health(time.Now())
	assert.True(t, ok, "just started")
	ok, _, _, _ = m.health(time.Now().Add(2*time.Second + 20*time.Second + time.Second))
	assert.False(t, ok, "no run ended within two intervals and a run timeout")
}

func TestABadConfigurationIsRefused(t *testing.T) {
	lan := probetest.NewLAN(t)
	good := Config{Interval: time.Second, RunTimeout: time.Second, MaxAddresses: 1, Probes: lan.ProbeConfig(time.Second)}
	for name, bad := range map[string]func(*Config){
		"interval":    func(c *Config) { c.Interval = 0 },
		"run timeout": func(c *Config) { c.RunTimeout = -time.Second },
		"jitter":      func(c *Config) { c.Jitter = 1 },
		"cap":         func(c *Config) { c.MaxAddresses = 0 },
		"ca file":     func(c *Config) { c.Probes.CAFile = "/nonexistent/ca.pem" },
	} {
		cfg := good
		bad(&cfg)
		_, err := New(cfg, lanSource(t, lan))
		assert.Error(t, err, name)
	}
}
