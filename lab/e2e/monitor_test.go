//go:build lab

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
)

// The monitor runs as on a LAN machine: the real binary in the laptop namespace, scraped from
// inside that namespace (curl to its loopback), its JSON log read from its stderr.

const (
	monitorInterval = 5 * time.Second
	monitorZone     = "apps.example.com"
)

type labMonitor struct {
	cmd  *exec.Cmd
	logs *syncbuf.Buffer
	port string
	done chan error
}

// startLabMonitor starts `monitor` in the laptop namespace with args (the lab CA, a 5 s
// interval, probes of 1 s) and waits for its start line; it is stopped with SIGTERM at cleanup.
// withCluster gives it the admin kubeconfig; without, KUBECONFIG points nowhere.
func startLabMonitor(t *testing.T, withCluster bool, args ...string) *labMonitor {
	t.Helper()
	bin, err := lanaccessBinary()
	require.NoError(t, err)
	argv := []string{"ip", "netns", "exec", lab.Laptop(), bin, "monitor", "--listen", "127.0.0.1:0", "--interval", monitorInterval.String(),
		"--timeout", "1s", "--ca-file", lab.CAFile}
	if withCluster {
		argv = append(argv, "--kubeconfig", lab.Kubeconfig)
	}
	m := &labMonitor{cmd: exec.Command(argv[0], append(argv[1:], args...)...), logs: &syncbuf.Buffer{}, done: make(chan error, 1)}
	m.cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent/kubeconfig")
	m.cmd.Stderr = m.logs
	require.NoError(t, m.cmd.Start())
	go func() { m.done <- m.cmd.Wait() }()
	t.Cleanup(func() { m.stop(t) })
	eventually(t, 30*time.Second, func() error {
		select {
		case err := <-m.done:
			m.done <- err
			return fmt.Errorf("the monitor exited: %v\n%s", err, m.logs.String())
		default:
		}
		for _, line := range m.lines(t, "monitor started") {
			_, port, _ := strings.Cut(line["listen"].(string), ":")
			m.port = port
			return nil
		}
		return errors.New("no start line yet")
	})
	return m
}

// stop sends SIGTERM and expects a clean exit (0) within the shutdown grace.
func (m *labMonitor) stop(t *testing.T) {
	t.Helper()
	if m.cmd.ProcessState != nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-m.done:
		m.done <- err
		assert.NoError(t, err, "the monitor exits 0 on SIGTERM\n%s", m.logs.String())
		assert.Contains(t, m.logs.String(), `"msg":"monitor stopped"`)
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		t.Errorf("the monitor did not stop within 20s of SIGTERM")
	}
}

// lines are the decoded log lines whose msg is msg.
func (m *labMonitor) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(m.logs.String(), "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil && v["msg"] == msg {
			out = append(out, v)
		}
	}
	return out
}

// scrape fetches /metrics from inside the laptop namespace and parses it with
// prometheus/common's text parser, as Prometheus reads it.
func (m *labMonitor) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := lab.Exec(ctx, lab.Laptop(), "curl", "-sf", "-m", "10", "http://127.0.0.1:"+m.port+"/metrics")
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(out))
	require.NoError(t, err)
	return fams
}

// gauge is the value of name's series with labels, and whether it is there.
func gauge(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if match && m.GetGauge() != nil {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// waitFor scrapes until cond holds and returns how long it took.
func (m *labMonitor) waitFor(t *testing.T, within time.Duration, what string, cond func(map[string]*dto.MetricFamily) bool) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, within, func() error {
		if cond(m.scrape(t)) {
			return nil
		}
		return errors.New(what)
	})
	return time.Since(start)
}

func successOf(fams map[string]*dto.MetricFamily, addr string) []float64 {
	var out []float64
	for _, kind := range []string{"dns_udp", "dns_tcp", "https"} {
		if v, ok := gauge(fams, "lanaccess_probe_success", map[string]string{"address": addr, "kind": kind}); ok {
			out = append(out, v)
		}
	}
	return out
}

func allEqual(vs []float64, want float64) bool {
	for _, v := range vs {
		if v != want {
			return false
		}
	}
	return len(vs) == 3
}

func TestMonitorWithoutClusterAccessFollowsANodeLinkDownAndBack(t *testing.T) {
	dead := nodeWithoutServicePods(t)
	m := startLabMonitor(t, false, "--addresses", strings.Join(lab.NodeIPs(), ","), "--zone", monitorZone, "--host", probeHost, "--skip", "LA402")
	m.waitFor(t, 3*monitorInterval, "every address answers every probe", func(f map[string]*dto.MetricFamily) bool {
		for _, a := range lab.NodeIPs() {
			if !allEqual(successOf(f, a), 1) {
				return false
			}
		}
		return true
	})
	fams := m.scrape(t)
	v, ok := gauge(fams, "lanaccess_check_status", map[string]string{"check": "LA301", "status": "pass"})
	assert.True(t, ok && v == 1, "LA301 passes on the healthy lab")
	_, ok = gauge(fams, "lanaccess_check_status", map[string]string{"check": "LA101"})
	assert.False(t, ok, "no configuration check without the cluster")
	expiry, ok := gauge(fams, "lanaccess_certificate_expiry_timestamp_seconds", map[string]string{"address": dead.IP})
	assert.True(t, ok && expiry > float64(time.Now().Unix()), "the lab certificate's expiry is served")

	t.Run("link down", func(t *testing.T) {
		lab.LinkDown(t, dead.Name)
		took := m.waitFor(t, 3*monitorInterval, dead.IP+" success 0", func(f map[string]*dto.MetricFamily) bool {
			return allEqual(successOf(f, dead.IP), 0)
		})
		t.Logf("%s success 0 after %s (interval %s)", dead.IP, took.Round(time.Millisecond), monitorInterval)
		assert.LessOrEqual(t, took, 2*monitorInterval, "within two intervals")
		for _, a := range lab.NodeIPs() {
			if a != dead.IP {
				assert.True(t, allEqual(successOf(m.scrape(t), a), 1), "%s still answers", a)
			}
		}
		// One more run with the link still down: the state holds, no second line.
		time.Sleep(monitorInterval + time.Second)
	})
	var down []map[string]any
	for _, l := range m.lines(t, "address state changed") {
		if l["address"] == dead.IP && l["to"] == "down" {
			down = append(down, l)
		}
	}
	require.Len(t, down, 1, "one state-change line names the dead address:\n%s", m.logs.String())
	assert.Equal(t, "up", down[0]["from"])
	finding, _ := down[0]["finding"].(map[string]any)
	require.NotNil(t, finding, "the line carries the finding")
	assert.Regexp(t, `^LA(301|401)-NO-ANSWER$`, finding["code"])
	assert.Contains(t, finding["message"], dead.IP)
	t.Logf("state-change line: %s", mustJSON(down[0]))

	took := m.waitFor(t, 3*monitorInterval, dead.IP+" success 1 again", func(f map[string]*dto.MetricFamily) bool {
		return allEqual(successOf(f, dead.IP), 1)
	})
	t.Logf("%s success 1 again after %s", dead.IP, took.Round(time.Millisecond))
	assert.LessOrEqual(t, took, 2*monitorInterval, "within two intervals")
	var up int
	for _, l := range m.lines(t, "address state changed") {
		if l["address"] == dead.IP && l["from"] == "down" && l["to"] == "up" {
			up++
		}
	}
	assert.Equal(t, 1, up, "one line when it comes back")
}

func TestMonitorWithTheClusterShowsAnAddressDroppedFromTheZoneAsDrift(t *testing.T) {
	m := startLabMonitor(t, true, "--skip", "LA402")
	m.waitFor(t, 3*monitorInterval, "no drift on the healthy lab", func(f map[string]*dto.MetricFamily) bool {
		v, ok := gauge(f, "lanaccess_dns_answer_missing", map[string]string{"answer": "10.0.10.13"})
		return ok && v == 0
	})
	lab.EditLanDNSCorefile(t, func(s string) string {
		out := regexp.MustCompile(`\n[^\n]*IN A 10\.0\.10\.13"`).ReplaceAllString(s, "")
		require.NotEqual(t, s, out, "the lab's Corefile answers 10.0.10.13")
		return out
	})
	took := m.waitFor(t, 60*time.Second, "10.0.10.13 missing from the answers", func(f map[string]*dto.MetricFamily) bool {
		v, ok := gauge(f, "lanaccess_dns_answer_missing", map[string]string{"answer": "10.0.10.13"})
		return ok && v == 1
	})
	t.Logf("drift seen %s after the ConfigMap edit was mounted", took.Round(time.Millisecond))
	fams := m.scrape(t)
	for _, a := range lab.NodeIPs() {
		v, ok := gauge(fams, "lanaccess_dns_answers_drift", map[string]string{"address": a})
		assert.True(t, ok && v == 1, "%s answers one address off: %v", a, v)
	}
	for _, id := range []string{"LA101", "LA301"} {
		v, _ := gauge(fams, "lanaccess_check_status", map[string]string{"check": id, "status": "fail"})
		assert.Equal(t, 1.0, v, "%s fails", id)
	}
	var la301 []map[string]any
	for _, l := range m.lines(t, "check state changed") {
		if l["check"] == "LA301" && l["to"] == "fail" {
			la301 = append(la301, l)
		}
	}
	require.NotEmpty(t, la301, m.logs.String())
	assert.Equal(t, "LA301-WRONG-ANSWER", la301[0]["finding"].(map[string]any)["code"])
	t.Logf("state-change line: %s", mustJSON(la301[0]))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// offlineDoctor runs doctor with --addresses from the laptop with no kubeconfig at all.
func offlineDoctor(t *testing.T) result {
	t.Helper()
	bin, err := lanaccessBinary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", lab.Laptop(), bin, "doctor", "-o", "json", "--ca-file", lab.CAFile,
		"--addresses", strings.Join(lab.NodeIPs(), ","), "--zone", monitorZone, "--host", probeHost)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent/kubeconfig", "HOME=/nonexistent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String(), hasJSON: true}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		r.Code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r.Doc), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	return r
}

var addrInObject = regexp.MustCompile(`\b\d+\.\d+\.\d+\.\d+\b`)

// pathVerdicts is each DNS and HTTPS check's status and the addresses its failing findings name.
func pathVerdicts(r result) map[string]string {
	out := map[string]string{}
	for _, c := range r.Doc.Checks {
		if !strings.HasPrefix(c.ID, "LA3") && !strings.HasPrefix(c.ID, "LA4") {
			continue
		}
		fails := c.objects("fail")
		addrs := make([]string, 0, len(fails))
		for _, o := range fails {
			addrs = append(addrs, addrInObject.FindAllString(o, -1)...)
		}
		sort.Strings(addrs)
		out[c.ID] = c.Status + " " + strings.Join(unique(addrs), ",")
	}
	return out
}

func TestDoctorWithoutClusterAccessGivesTheFullDoctorsPathVerdicts(t *testing.T) {
	compare := func(t *testing.T, state string) {
		t.Helper()
		full := doctor(t, "--no-helpers", "--host", probeHost)
		offline := offlineDoctor(t)
		require.Len(t, pathVerdicts(full), 7, full.statuses())
		assert.Equal(t, pathVerdicts(full), pathVerdicts(offline), "%s: the same DNS and HTTPS verdicts", state)
		for _, c := range offline.Doc.Checks {
			if !strings.HasPrefix(c.ID, "LA3") && !strings.HasPrefix(c.ID, "LA4") {
				assert.Equal(t, "skip", c.Status, c.ID)
				assert.Contains(t, c.Reason, "needs the Kubernetes API")
			}
		}
		t.Logf("%s: %v", state, pathVerdicts(offline))
	}
	t.Run("healthy", func(t *testing.T) { compare(t, "healthy lab") })
	t.Run("one node cut off", func(t *testing.T) {
		dead := nodeWithoutServicePods(t)
		lab.LinkDown(t, dead.Name)
		compare(t, dead.Name+" cut off")
	})
	t.Run("catch-all template removed", func(t *testing.T) {
		lab.EditLanDNSCorefile(t, func(s string) string { return anyTemplate.ReplaceAllString(s, "") })
		eventually(t, 30*time.Second, func() error {
			if c := offlineDoctor(t).check(t, "LA302"); c.Status != "fail" {
				return errorf("LA302 is %s after the reload", c.Status)
			}
			return nil
		})
		compare(t, "catch-all removed")
	})
}
