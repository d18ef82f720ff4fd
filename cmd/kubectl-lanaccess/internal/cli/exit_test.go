package cli

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
)

// kubeconfigFor writes a kubeconfig with one context "lab" whose server is server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "`+server+`", insecure-skip-tls-verify: true}
users:
- name: lab
  user: {token: t}
contexts:
- name: lab
  context: {cluster: lab, user: lab}
current-context: lab
`), 0o600))
	return path
}

func runReal(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := NewRootCommand(streams)
	defer klogQuiet()
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String() + errText(err), ExitCode(err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Every command gives the same exit code for the same cause: 2 for a bad kubeconfig or
// context, 3 for a cluster that cannot be reached.
func TestExitCodesAreTheSameForEveryCommand(t *testing.T) {
	unreachable := kubeconfigFor(t, "https://127.0.0.1:1")
	commands := [][]string{
		{"doctor", "--no-helpers", "--timeout", "500ms"},
		{"vpn-trace"},
		{"client-check"},
		{"client-config", "--os", "linux"},
		{"cleanup"},
	}
	for _, cmd := range commands {
		_, errOut, code := runReal(t, append(append([]string{}, cmd...), "--kubeconfig", unreachable, "--context", "nope", "--request-timeout", "2s")...)
		assert.Equal(t, ExitUsage, code, "%v with a context that does not exist: %s", cmd, errOut)
		_, errOut, code = runReal(t, append(append([]string{}, cmd...), "--kubeconfig", unreachable, "--request-timeout", "2s")...)
		assert.Equal(t, ExitUnevaluated, code, "%v with an unreachable cluster: %s", cmd, errOut)
	}
}

// A CI job always gets a report, even when the run cannot start.
func TestReportsAreWrittenWhenTheRunCannotStart(t *testing.T) {
	unreachable := kubeconfigFor(t, "https://127.0.0.1:1")
	dir := t.TempDir()
	js, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	out, _, code := runReal(t, "doctor", "--no-helpers", "-o", "json", "--json-file", js, "--junit-file", junit,
		"--kubeconfig", unreachable, "--request-timeout", "2s")
	assert.Equal(t, ExitUnevaluated, code)
	doc := decode(t, out)
	require.Len(t, doc.Checks, 1)
	assert.Equal(t, "LA000", doc.Checks[0].ID)
	assert.Equal(t, "error", doc.Checks[0].Status)
	assert.Contains(t, doc.Checks[0].Reason, "127.0.0.1:1")
	raw, err := os.ReadFile(js)
	require.NoError(t, err)
	assert.Equal(t, "LA000", decode(t, string(raw)).Checks[0].ID)
	raw, err = os.ReadFile(junit)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `<error message=`)

	out, _, code = runReal(t, "vpn-trace", "-o", "junit", "--kubeconfig", unreachable, "--context", "nope")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, out, `name="VPN000 The run could start`)
}

func TestVerbosityShowsTheAPIRequestsAsKubectlDoes(t *testing.T) {
	unreachable := kubeconfigFor(t, "https://127.0.0.1:1")
	_, errOut, code := runReal(t, "cleanup", "-v=6", "--kubeconfig", unreachable, "--request-timeout", "2s")
	assert.Equal(t, ExitUnevaluated, code)
	assert.Contains(t, errOut, "https://127.0.0.1:1/api/v1/pods", "-v=6 logs the requests")
	_, errOut, _ = runReal(t, "cleanup", "--kubeconfig", unreachable, "--request-timeout", "2s")
	assert.NotContains(t, errOut, "round_trippers.go", "without -v, client-go's log stays quiet")
}

// klogQuiet puts klog back to silence after a test that raised it.
func klogQuiet() { klog.SetOutput(io.Discard) }

// Every --zone goes through zone.Parse while the flags are validated: a value that is not a DNS
// name (here a Corefile block and a newline) is a usage error before the cluster is read.
func TestAnInvalidZoneIsAUsageErrorOfEveryCommand(t *testing.T) {
	unreachable := kubeconfigFor(t, "https://127.0.0.1:1")
	commands := [][]string{
		{"doctor", "--no-helpers"},
		{"doctor", "--addresses", "10.0.10.11"},
		{"monitor", "--addresses", "10.0.10.11"},
		{"client-check"},
		{"client-check", "--dns-server", "10.0.10.11"},
		{"client-config", "--os", "linux"},
		{"client-config", "--os", "linux", "--dns-server", "10.0.10.11"},
	}
	for _, cmd := range commands {
		for _, bad := range []string{"apps.example.com {\n forward . 1.1.1.1\n}", "apps.example.com\nevil", "."} {
			_, errOut, code := runReal(t, append(append([]string{}, cmd...), "--zone", bad, "--kubeconfig", unreachable, "--request-timeout", "2s")...)
			assert.Equal(t, ExitUsage, code, "%v --zone %q: %s", cmd, bad, errOut)
			assert.Contains(t, errOut, "zone", "%v --zone %q", cmd, bad)
			assert.NotContains(t, errOut, "127.0.0.1:1", "%v --zone %q: the cluster is not read", cmd, bad)
		}
	}
}

// No kubeconfig, no --server and not in a pod: every command that reads the cluster exits 2
// naming where it looked and what works without one (not client-go's localhost:8080 and 3),
// and the machine-readable report says so.
func TestNoKubeconfigIsAUsageErrorWithTheHint(t *testing.T) {
	// A KUBECONFIG naming a file that does not exist loads as empty, as no ~/.kube/config
	// does (clientcmd skips missing files of the precedence list); the real home's file is not
	// read.
	missing := filepath.Join(t.TempDir(), "config")
	t.Setenv("KUBECONFIG", missing)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, cmd := range [][]string{
		{"doctor", "--no-helpers"},
		{"vpn-trace"},
		{"client-check"},
		{"client-config", "--os", "linux"},
		{"cleanup"},
		{"monitor", "--run-timeout", "2s"},
	} {
		_, errOut, code := runReal(t, cmd...)
		assert.Equal(t, ExitUsage, code, "%v: %s", cmd, errOut)
		assert.Contains(t, errOut, "no kubeconfig", "%v", cmd)
		assert.Contains(t, errOut, missing, "%v names where it looked", cmd)
		assert.NotContains(t, errOut, "localhost:8080", "%v", cmd)
	}
	js := filepath.Join(t.TempDir(), "r.json")
	_, _, code := runReal(t, "doctor", "--json-file", js)
	assert.Equal(t, ExitUsage, code)
	raw, err := os.ReadFile(js)
	require.NoError(t, err)
	assert.Equal(t, "LA000", decode(t, string(raw)).Checks[0].ID)
}

// A refused flag or value (exit 2) still leaves the reports a CI job asked for: the
// not-started result naming the mistake.
func TestReportsAreWrittenForUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		id   string
		says string
	}{
		{[]string{"doctor", "--skip", "LA999"}, "LA000", "LA999"},
		{[]string{"vpn-trace", "--fail-on", "sometimes"}, "VPN000", "--fail-on"},
		{[]string{"client-check", "--answer", "10.0.0.1"}, "WS000", "--answer"},
		{[]string{"doctor", "--no-such-flag"}, "LA000", "unknown flag"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		js, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
		_, errOut, code := runReal(t, append([]string{c.args[0], "--json-file", js, "--junit-file", junit}, c.args[1:]...)...)
		assert.Equal(t, ExitUsage, code, "%v: %s", c.args, errOut)
		raw, err := os.ReadFile(js)
		require.NoError(t, err, "%v", c.args)
		doc := decode(t, string(raw))
		require.Len(t, doc.Checks, 1)
		assert.Equal(t, c.id, doc.Checks[0].ID)
		assert.Equal(t, "error", doc.Checks[0].Status)
		assert.Contains(t, doc.Checks[0].Reason, c.says)
		raw, err = os.ReadFile(junit)
		require.NoError(t, err, "%v", c.args)
		assert.Contains(t, string(raw), c.id)
	}
}

// pflag stops at the first bad flag; the report paths after it are still found.
func TestReportPathsFromArgs(t *testing.T) {
	for _, c := range []struct {
		args        []string
		json, junit string
	}{
		{[]string{"doctor", "--bad", "--json-file", "a.json", "--junit-file=b.xml"}, "a.json", "b.xml"},
		{[]string{"doctor", "--", "--json-file", "a.json"}, "", ""},
		{[]string{"doctor", "--json-file"}, "", ""},
	} {
		f := NewCheckFlags()
		f.reportPathsFromArgs(c.args)
		assert.Equal(t, c.json, f.JSONFile, "%v", c.args)
		assert.Equal(t, c.junit, f.JUnitFile, "%v", c.args)
	}
}
