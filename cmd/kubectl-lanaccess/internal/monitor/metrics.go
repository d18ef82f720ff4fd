package monitor

import (
	"net/netip"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// Label values come from three places only: the catalogue (check IDs, titles, sections, finding
// codes), fixed sets (statuses, severities, probe kinds, results) and the path's addresses,
// which are parsed IP addresses written canonically, at most Config.MaxAddresses of them. What
// the network answers (DNS answers, certificate names, error texts) never becomes a label.

// Metric names, in one place: the shipped alert rules and dashboard are tested against them.
const (
	mBuildInfo       = "lanaccess_build_info"
	mRuns            = "lanaccess_monitor_runs_total"
	mRunDuration     = "lanaccess_monitor_run_duration_seconds"
	mLastRun         = "lanaccess_monitor_last_run_timestamp_seconds"
	mLastRunSuccess  = "lanaccess_monitor_last_run_success"
	mInterval        = "lanaccess_monitor_interval_seconds"
	mOverruns        = "lanaccess_monitor_overruns_total"
	mAddresses       = "lanaccess_monitor_addresses"
	mUnlabelled      = "lanaccess_monitor_addresses_unlabelled"
	mCheckStatus     = "lanaccess_check_status"
	mCheckInfo       = "lanaccess_check_info"
	mCheckDuration   = "lanaccess_check_duration_seconds"
	mFindings        = "lanaccess_check_findings"
	mProbeSuccess    = "lanaccess_probe_success"
	mProbes          = "lanaccess_probes_total"
	mProbeDuration   = "lanaccess_probe_duration_seconds"
	mHandshake       = "lanaccess_https_handshake_seconds"
	mCertExpiry      = "lanaccess_certificate_expiry_timestamp_seconds"
	mAnswersDrift    = "lanaccess_dns_answers_drift"
	mAnswerMissing   = "lanaccess_dns_answer_missing"
	mAnswerSets      = "lanaccess_dns_answer_sets"
	mExpectedAnswers = "lanaccess_dns_expected_answers"
)

// MetricNames lists every metric the monitor serves besides the Go runtime's and the process's
// (go_*, process_*).
func MetricNames() []string {
	return []string{mBuildInfo, mRuns, mRunDuration, mLastRun, mLastRunSuccess, mInterval, mOverruns, mAddresses,
		mUnlabelled, mCheckStatus, mCheckInfo, mCheckDuration, mFindings, mProbeSuccess, mProbes, mProbeDuration,
		mHandshake, mCertExpiry, mAnswersDrift, mAnswerMissing, mAnswerSets, mExpectedAnswers}
}

var statuses = []engine.Status{engine.StatusPass, engine.StatusWarn, engine.StatusFail, engine.StatusSkip, engine.StatusError}

var (
	dCheckStatus = prometheus.NewDesc(mCheckStatus, "1 for the status of each check in the last run (pass, warn, fail, skip, error), 0 for the others.", []string{"check", "status"}, nil)
	dCheckInfo   = prometheus.NewDesc(mCheckInfo, "The catalogue's title and section of each check the monitor runs (always 1).", []string{"check", "title", "section"}, nil)
	dCheckDur    = prometheus.NewDesc(mCheckDuration, "How long each check took in the last run.", []string{"check"}, nil)
	dFindings    = prometheus.NewDesc(mFindings, "Findings of the last run by check, finding code (from the catalogue) and severity.", []string{"check", "code", "severity"}, nil)
	dSuccess     = prometheus.NewDesc(mProbeSuccess, "1 when every probe of this kind to the address answered in the last run, 0 when one did not (no answer, refused, TLS or protocol error).", []string{"address", "kind"}, nil)
	dCertExpiry  = prometheus.NewDesc(mCertExpiry, "NotAfter of the certificate the address served for the probe host, as a Unix time.", []string{"address"}, nil)
	dDrift       = prometheus.NewDesc(mAnswersDrift, "Addresses that differ between the zone's A answers from this DNS address in the last run and the expected set (missing plus unexpected); 0 = no drift.", []string{"address"}, nil)
	dMissing     = prometheus.NewDesc(mAnswerMissing, "1 when an A answer of the zone lacked this expected address in the last run.", []string{"answer"}, nil)
	dAnswerSets  = prometheus.NewDesc(mAnswerSets, "Distinct A answer sets the zone gave in the last run across addresses and replicas; above 1, servers disagree.", nil, nil)
	dExpected    = prometheus.NewDesc(mExpectedAnswers, "Addresses the zone's A answers must give (the DNS Service's IPv4 externalIPs, or --addresses).", nil, nil)
	dAddresses   = prometheus.NewDesc(mAddresses, "Node addresses the last run probed.", nil, nil)
	dUnlabelled  = prometheus.NewDesc(mUnlabelled, "Addresses probed but left out of per-address labels (beyond --max-addresses): the checks still judge them.", nil, nil)
	dLastSuccess = prometheus.NewDesc(mLastRunSuccess, "1 when the last run could start (setup read, checks run), 0 when it could not.", nil, nil)
)

// snapshot is the state of the last completed run: served as a whole, so that a scrape never
// sees half of one run and half of the next.
type snapshot struct {
	results     []engine.Result
	success     map[probeKey]bool
	certs       map[netip.Addr]time.Time
	drift       map[netip.Addr]int
	missing     map[netip.Addr]bool
	answerSets  int
	expected    int
	addresses   int
	unlabelled  int
	lastSuccess bool
	haveRun     bool
}

// metrics holds the collectors: the snapshot for last-run gauges, vectors for what accumulates
// over runs (counters, histograms).
type metrics struct {
	reg *prometheus.Registry

	mu   sync.Mutex
	snap snapshot
	// labelled are the addresses that have series in the vectors, to delete them when they
	// leave the path (a DHCP change): cardinality stays bounded by the cap.
	labelled map[netip.Addr]bool

	runs        *prometheus.CounterVec
	runDuration prometheus.Histogram
	lastRun     prometheus.Gauge
	overruns    prometheus.Counter
	probes      *prometheus.CounterVec
	probeDur    *prometheus.HistogramVec
	handshake   *prometheus.HistogramVec
}

// probeBuckets span a LAN round trip to a probe timeout.
var probeBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10}

func newMetrics(interval time.Duration, v version.Info) *metrics {
	m := &metrics{
		reg:      prometheus.NewRegistry(),
		labelled: map[netip.Addr]bool{},
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: mRuns,
			Help: "Runs started, by result: ok (the checks ran, whatever they found) or error (the run could not start: the setup could not be read)."}, []string{"result"}),
		runDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: mRunDuration, Help: "Wall time of each run.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60}}),
		lastRun:  prometheus.NewGauge(prometheus.GaugeOpts{Name: mLastRun, Help: "When the last run ended, as a Unix time."}),
		overruns: prometheus.NewCounter(prometheus.CounterOpts{Name: mOverruns, Help: "Runs that took longer than the interval (the next one started late, never at the same time)."}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: mProbes,
			Help: "Probes to each address by kind and result (success or failure); a probe skipped because the address was already silent in that run counts as a failure."}, []string{"address", "kind", "result"}),
		probeDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: mProbeDuration,
			Help: "Duration of each probe sent to an address, by kind (no answer = the probe timeout).", Buckets: probeBuckets}, []string{"address", "kind"}),
		handshake: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: mHandshake,
			Help: "TLS handshake time of the HTTPS probe of each address.", Buckets: probeBuckets}, []string{"address"}),
	}
	for _, r := range []string{"ok", "error"} {
		m.runs.WithLabelValues(r)
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: mBuildInfo, Help: "The monitor's build (always 1).",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": runtime.Version()}})
	build.Set(1)
	intervalG := prometheus.NewGauge(prometheus.GaugeOpts{Name: mInterval, Help: "The configured interval between runs."})
	intervalG.Set(interval.Seconds())
	m.reg.MustRegister(m.runs, m.runDuration, m.lastRun, m.overruns, m.probes, m.probeDur, m.handshake, build, intervalG, m,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Describe and Collect serve the snapshot (prometheus.Collector).
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dCheckStatus, dCheckInfo, dCheckDur, dFindings, dSuccess, dCertExpiry, dDrift, dMissing, dAnswerSets, dExpected, dAddresses, dUnlabelled, dLastSuccess} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	s := m.snap
	m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if !s.haveRun {
		return
	}
	gauge(dLastSuccess, boolFloat(s.lastSuccess))
	gauge(dAddresses, float64(s.addresses))
	gauge(dUnlabelled, float64(s.unlabelled))
	gauge(dExpected, float64(s.expected))
	for _, r := range s.results {
		e := catalogue.Get(r.ID)
		gauge(dCheckInfo, 1, r.ID, e.Title, string(e.Section))
		for _, st := range statuses {
			gauge(dCheckStatus, boolFloat(r.Status == st), r.ID, string(st))
		}
		gauge(dCheckDur, r.Duration.Seconds(), r.ID)
		for k, n := range findingCounts(r) {
			gauge(dFindings, float64(n), r.ID, k.code, k.severity)
		}
	}
	for k, ok := range s.success {
		gauge(dSuccess, boolFloat(ok), k.addr.String(), string(k.kind))
	}
	for a, t := range s.certs {
		gauge(dCertExpiry, float64(t.Unix()), a.String())
	}
	for a, n := range s.drift {
		gauge(dDrift, float64(n), a.String())
	}
	for a, miss := range s.missing {
		gauge(dMissing, boolFloat(miss), a.String())
	}
	if s.answerSets > 0 {
		gauge(dAnswerSets, float64(s.answerSets))
	}
}

type findingKey struct{ code, severity string }

// findingCounts counts a result's findings by code; a code the catalogue does not declare for
// the check (there should be none) is counted as "other", never used as a label.
func findingCounts(r engine.Result) map[findingKey]int {
	e := catalogue.Get(r.ID)
	out := map[findingKey]int{}
	for _, f := range r.Findings {
		code := f.Code
		if !e.Declares(code) {
			code = "other"
		}
		out[findingKey{code, string(f.Severity)}]++
	}
	return out
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// runFailed records a run that could not start: the last results stay served (they are the
// last known), marked by lanaccess_monitor_last_run_success 0.
func (m *metrics) runFailed(took time.Duration, end time.Time) {
	m.runs.WithLabelValues("error").Inc()
	m.runDuration.Observe(took.Seconds())
	m.lastRun.Set(float64(end.Unix()))
	m.mu.Lock()
	m.snap.haveRun = true
	m.snap.lastSuccess = false
	m.mu.Unlock()
}

// runDone turns one completed run into metrics.
func (m *metrics) runDone(rd *runData, took time.Duration, end time.Time) {
	m.runs.WithLabelValues("ok").Inc()
	m.runDuration.Observe(took.Seconds())
	m.lastRun.Set(float64(end.Unix()))
	s := snapshot{results: rd.results, success: map[probeKey]bool{}, certs: rd.obs.certs, drift: map[netip.Addr]int{},
		missing: map[netip.Addr]bool{}, expected: len(rd.path.Expected), addresses: len(rd.all),
		unlabelled: len(rd.all) - len(rd.labelled), lastSuccess: true, haveRun: true}
	keep := map[netip.Addr]bool{}
	for _, a := range rd.labelled {
		keep[a] = true
	}
	for k, o := range rd.obs.probes {
		s.success[k] = o.failed == 0 && o.ok > 0
		addr, kind := k.addr.String(), string(k.kind)
		m.probes.WithLabelValues(addr, kind, "success").Add(float64(o.ok))
		m.probes.WithLabelValues(addr, kind, "failure").Add(float64(o.failed))
		for _, d := range o.durations {
			m.probeDur.WithLabelValues(addr, kind).Observe(d.Seconds())
		}
	}
	for a, d := range rd.obs.shakes {
		m.handshake.WithLabelValues(a.String()).Observe(d.Seconds())
	}
	s.drift, s.missing, s.answerSets = drift(rd.path.Expected, rd.obs.answers)
	// The expected set comes from the DNS Service's externalIPs: like every per-address
	// label, only the labelled addresses (--max-addresses) get a series (issue 23: the answer
	// label was unbounded). LA301 judges them all.
	for a := range s.missing {
		if !keep[a] {
			delete(s.missing, a)
		}
	}
	for a := range s.drift {
		if !keep[a] {
			delete(s.drift, a)
		}
	}
	m.mu.Lock()
	m.snap = s
	for a := range m.labelled {
		if !keep[a] {
			m.forget(a)
		}
	}
	m.labelled = keep
	m.mu.Unlock()
}

// forget deletes the accumulated series of an address that left the path.
func (m *metrics) forget(a netip.Addr) {
	addr := a.String()
	for _, k := range Kinds {
		m.probeDur.DeleteLabelValues(addr, string(k))
		for _, r := range []string{"success", "failure"} {
			m.probes.DeleteLabelValues(addr, string(k), r)
		}
	}
	m.handshake.DeleteLabelValues(addr)
}

// drift compares the zone's A answers with the expected set: per server, how many addresses
// differ; per expected address, whether some answer lacked it; and how many distinct sets the
// answers held (servers or replicas that disagree). Unexpected addresses are counted, never
// named: they come from the network.
func drift(expected []netip.Addr, answers []answerObs) (map[netip.Addr]int, map[netip.Addr]bool, int) {
	perServer := map[netip.Addr]map[netip.Addr]bool{}
	missing := map[netip.Addr]bool{}
	sets := map[string]bool{}
	if len(expected) == 0 || len(answers) == 0 {
		return map[netip.Addr]int{}, missing, 0
	}
	for _, e := range expected {
		missing[e] = false
	}
	for _, a := range answers {
		sets[probe.JoinAddrs(a.addrs)] = true
		diff := perServer[a.server]
		if diff == nil {
			diff = map[netip.Addr]bool{}
			perServer[a.server] = diff
		}
		miss, extra := probe.DiffAddrs(expected, a.addrs)
		for _, x := range miss {
			diff[x] = true
			missing[x] = true
		}
		for _, x := range extra {
			diff[x] = true
		}
	}
	out := map[netip.Addr]int{}
	for s, d := range perServer {
		out[s] = len(d)
	}
	return out, missing, len(sets)
}

// sortedAddrs returns the keys of m in order.
func sortedAddrs[V any](m map[netip.Addr]V) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// clip bounds a text taken from a finding or an error for a log line.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
