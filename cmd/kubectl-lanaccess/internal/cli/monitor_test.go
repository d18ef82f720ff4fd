package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
)

// runningMonitor is a monitor started as RunE starts it, with the probes aimed at the stand-in
// LAN.
type runningMonitor struct {
	logs *syncbuf.Buffer
	base string
	stop func() int
}

func monitorOptionsFor(t *testing.T, connect clientFactory, args ...string) (*monitorOptions, error) {
	t.Helper()
	f := NewMonitorFlags()
	cmd := &cobra.Command{Use: "monitor"}
	f.AddFlags(cmd)
	require.NoError(t, cmd.ParseFlags(args))
	return f.ToOptions(cmd, newKubeFlags(), connect)
}

func startMonitor(t *testing.T, lan *probetest.LAN, connect clientFactory, args ...string) *runningMonitor {
	t.Helper()
	o, err := monitorOptionsFor(t, connect, append([]string{"--listen", "127.0.0.1:0", "--timeout", "500ms"}, args...)...)
	require.NoError(t, err)
	o.cfg.Probes = lan.ProbeConfig(500 * time.Millisecond)
	logs := &syncbuf.Buffer{}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: logs}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, streams) }()
	r := &runningMonitor{logs: logs}
	r.stop = func() int {
		cancel()
		select {
		case err := <-done:
			return ExitCode(err)
		case <-time.After(15 * time.Second):
			t.Fatal("the monitor did not stop")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	require.Eventually(t, func() bool {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "monitor started" {
				r.base = "http://" + m["listen"].(string)
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "no start line: %s", logs.String())
	return r
}

// metricsOnceRun waits until a run has been served and returns the /metrics text.
func (r *runningMonitor) metricsOnceRun(t *testing.T) string {
	t.Helper()
	var text string
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.base + "/metrics")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		text = string(b)
		return strings.Contains(text, "lanaccess_check_status")
	}, 20*time.Second, 50*time.Millisecond)
	return text
}

func TestMonitorWithAddressesServesThePathChecksAndStopsWithExitZero(t *testing.T) {
	lan := probetest.NewLAN(t)
	r := startMonitor(t, lan, noCluster(t), "--addresses", strings.Join(lan.Addrs, ","), "--zone", probetest.LANZone, "--host", probetest.LANHost, "--interval", "1h")
	text := r.metricsOnceRun(t)
	assert.Contains(t, text, `lanaccess_probe_success{address="10.0.10.12",kind="https"} 1`)
	assert.Contains(t, text, `lanaccess_check_status{check="LA301",status="pass"} 1`)
	assert.NotContains(t, text, `check="LA101"`, "no configuration check without the cluster")
	resp, err := http.Get(r.base + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, ExitOK, r.stop())
	assert.Contains(t, r.logs.String(), `"msg":"monitor stopped"`)
}

func TestMonitorWithTheClusterRunsTheConfigurationChecksToo(t *testing.T) {
	lan := probetest.NewLAN(t)
	r := startMonitor(t, lan, fixtureClients(t, fixtures+"/healthy"), "--interval", "1h")
	text := r.metricsOnceRun(t)
	for _, id := range []string{"LA001", "LA101", "LA104", "LA301", "LA401"} {
		assert.Contains(t, text, `lanaccess_check_status{check="`+id+`",status="pass"} 1`, id)
	}
	assert.NotContains(t, text, `check="LA201"`, "the monitor creates no helper pods")
	assert.Contains(t, text, `lanaccess_probe_success{address="10.0.10.13",kind="dns_udp"} 1`)
	assert.Equal(t, ExitOK, r.stop())
}

func TestMonitorWithAMissingNamedObjectExitsTwoBeforeServing(t *testing.T) {
	o, err := monitorOptionsFor(t, fixtureClients(t, fixtures+"/healthy"), "--dns-service", "lan-dns/nope", "--listen", "127.0.0.1:0")
	require.NoError(t, err)
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	err = o.Run(t.Context(), streams)
	assert.Equal(t, ExitUsage, ExitCode(err), "%v", err)
	assert.NotContains(t, errOut.String(), "monitor started")
}

func TestMonitorRefusesABadConfigurationWithExitTwo(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = busy.Close() }()
	offline := []string{"--addresses", "10.0.10.11,10.0.10.12", "--zone", probetest.LANZone}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addresses", "10.0.10.11"}, "needs --zone"},
		{append([]string{"--interval", "10ms"}, offline...), "--interval"},
		{append([]string{"--run-timeout", "1s", "--timeout", "2s"}, offline...), "--run-timeout"},
		{append([]string{"--listen", "nowhere"}, offline...), "--listen"},
		{append([]string{"--only", "LA999"}, offline...), "LA999"},
		{append([]string{"--only", "WS001"}, offline...), "WS001"},
		{append([]string{"--max-addresses", "1"}, offline...), "more than --max-addresses"},
		{append([]string{"--ca-file", "/nonexistent.pem"}, offline...), "--ca-file"},
		{append([]string{"--listen", busy.Addr().String()}, offline...), "--listen"},
		{append([]string{"--web-config-file", "/nonexistent.yml"}, offline...), "--web-config-file"},
		{append([]string{"--web-config-file", badWebConfig(t)}, offline...), "--web-config-file"},
	} {
		o, err := monitorOptionsFor(t, noCluster(t), tc.args...)
		if err == nil {
			streams, _, _, _ := genericiooptions.NewTestIOStreams()
			err = o.Run(t.Context(), streams)
		}
		assert.Equal(t, ExitUsage, ExitCode(err), "%v: %v", tc.args, err)
		if err != nil {
			assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
		}
	}
}

// badWebConfig is a web configuration whose certificate file does not exist.
func badWebConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "web.yml")
	require.NoError(t, os.WriteFile(path, []byte("tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n"), 0o600))
	return path
}

func TestMonitorAcceptsWorkstationChecksWithWorkstation(t *testing.T) {
	_, err := monitorOptionsFor(t, noCluster(t), "--addresses", "10.0.10.11", "--zone", probetest.LANZone, "--workstation", "--only", "LA3,WS003")
	require.NoError(t, err)
}

func TestMonitorIsACommandOfThePlugin(t *testing.T) {
	out, _, code := runCLI(t, noCluster(t), "monitor", "--help")
	require.Equal(t, ExitOK, code)
	for _, flag := range []string{"--addresses", "--zone", "--interval", "--listen", "--workstation", "--max-addresses", "--config", "--web-config-file"} {
		assert.Contains(t, out, flag)
	}
	for _, flag := range []string{"--wait", "--junit-file", "--no-helpers", "--output"} {
		assert.NotContains(t, out, flag, "doctor's %s does not apply to the monitor", flag)
	}
}
