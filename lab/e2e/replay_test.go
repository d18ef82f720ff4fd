//go:build lab

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
)

// replaySaveEnv names a directory where TestReplayGivesTheLiveVerdicts leaves each variant's
// bundle and expected verdicts (testdata/replays/<case>/{bundle.gz,expect}).
const replaySaveEnv = "LANACCESS_REPLAY_SAVE"

// TestReplayGivesTheLiveVerdicts records doctor on the healthy lab and on broken variants (the
// faults of doctor_test.go, made for real), replays each bundle with no cluster and no network
// (a fresh network namespace holding only a loopback that is down), and asserts that the replay
// gives the live run's verdicts: every check's status and every finding's code, severity,
// object and fix.
func TestReplayGivesTheLiveVerdicts(t *testing.T) {
	variants := []struct {
		name string
		args []string
		// vpn is a vpn-trace run (from the workstation) instead of doctor's.
		vpn      bool
		breakLab func(t *testing.T)
	}{
		// The lab's OpenVPN pod forwards nothing by default (ip_forward=0): vpn-trace's case.
		{name: "lab-vpn-forwarding-off", vpn: true, args: []string{"-n", "vpn"}, breakLab: func(t *testing.T) { t.Helper() }},
		// The same, with the ladder walked from the laptop through the connected tunnel: the
		// peer answers, the pod behind it does not.
		{name: "lab-vpn-from-client", vpn: true, args: []string{"-n", "vpn", "--from-client"}, breakLab: waitTunnel},
		{name: "lab-healthy", breakLab: func(t *testing.T) {
			t.Helper()
			installBundles(t, "rbac-doctor", "rbac-helpers")
		}},
		{name: "lab-dead-node", args: []string{"--no-helpers", "--skip", "LA402"}, breakLab: func(t *testing.T) {
			t.Helper()
			lab.LinkDown(t, nodeWithoutServicePods(t).Name)
		}},
		{name: "lab-no-catch-all", args: []string{"--no-helpers"}, breakLab: func(t *testing.T) {
			t.Helper()
			lab.EditLanDNSCorefile(t, func(s string) string { return anyTemplate.ReplaceAllString(s, "") })
			eventually(t, 30*time.Second, func() error {
				if c := doctor(t, "--only", "LA302", "--no-helpers").check(t, "LA302"); c.Status != "fail" {
					return errorf("LA302 is %s after the reload", c.Status)
				}
				return nil
			})
		}},
		{name: "lab-address-dropped", args: []string{"--no-helpers"}, breakLab: func(t *testing.T) {
			t.Helper()
			lab.EditLanDNSCorefile(t, func(s string) string {
				return regexp.MustCompile(`\n[^\n]*IN A 10\.0\.10\.13"`).ReplaceAllString(s, "")
			})
			eventually(t, 30*time.Second, func() error {
				if c := doctor(t, "--only", "LA301", "--no-helpers").check(t, "LA301"); c.Status != "fail" {
					return errorf("LA301 is %s after the reload", c.Status)
				}
				return nil
			})
		}},
		{name: "lab-wrong-cert", args: []string{"--no-helpers"}, breakLab: func(t *testing.T) {
			t.Helper()
			lab.ServeWrongCertificate(t, labkit.CertWrongHost)
		}},
		// The certificates are kept as DER and judged again on replay: an expired one and one
		// from a CA nobody trusts, both for the right name. ServeWrongCertificate waits for the
		// Secret's sync, not for Traefik's reload: wait until the probe sees the change.
		{name: "lab-expired-cert", args: []string{"--no-helpers", "--only", "LA401"}, breakLab: func(t *testing.T) {
			t.Helper()
			serveUntilLA401Changes(t, labkit.CertExpired)
		}},
		{name: "lab-unknown-ca", args: []string{"--no-helpers", "--only", "LA401"}, breakLab: func(t *testing.T) {
			t.Helper()
			serveUntilLA401Changes(t, labkit.CertUnknownCA)
		}},
		{name: "lab-cluster-first", args: []string{"--no-helpers"}, breakLab: func(t *testing.T) {
			t.Helper()
			lab.SetDNSPolicy(t, "traefik", "lan-dns", corev1.DNSClusterFirst)
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			v.breakLab(t)
			bundle := filepath.Join(t.TempDir(), "bundle.gz")
			command := "doctor"
			var live result
			if v.vpn {
				command = "vpn-trace"
				live = runPlugin(t, append([]string{command, "-o", "json", "--record", bundle}, v.args...)...)
			} else {
				live = doctor(t, append(v.args, "--record", bundle)...)
			}
			require.FileExists(t, bundle, live.Stderr)
			if containsArg(v.args, "--from-client") {
				b, err := replay.ReadFile(bundle)
				require.NoError(t, err)
				require.NotEmpty(t, b.Calls, "the ladder from the laptop is in the bundle: %s", b.Summary())
			}
			want, err := replay.Verdicts([]byte(live.Stdout))
			require.NoError(t, err)

			start := time.Now()
			stdout, code := replayOffline(t, command, "-o", "json", "--replay", bundle)
			elapsed := time.Since(start)
			got, err := replay.Verdicts(stdout)
			require.NoError(t, err, "%s", stdout)
			assert.Equal(t, want, got, "the replay gives the live verdicts")
			assert.Equal(t, live.Code, code, "and the live exit code")
			st, err := os.Stat(bundle)
			require.NoError(t, err)
			t.Logf("%s: live %s (exit %d), replay %s, bundle %d bytes", v.name, live.Elapsed, live.Code, elapsed.Round(time.Millisecond), st.Size())
			if dir := os.Getenv(replaySaveEnv); dir != "" {
				saveCase(t, filepath.Join(dir, v.name), bundle, want)
			}
		})
	}
}

// serveUntilLA401Changes serves a wrong certificate and waits until LA401 no longer passes.
func serveUntilLA401Changes(t *testing.T, kind labkit.CertKind) {
	t.Helper()
	lab.ServeWrongCertificate(t, kind)
	eventually(t, 30*time.Second, func() error {
		if c := doctor(t, "--only", "LA401", "--no-helpers").check(t, "LA401"); c.Status == "pass" {
			return errorf("LA401 still passes with the %s certificate", kind)
		}
		return nil
	})
}

// replayEveryEnv set to 1 replays every doctor run of the lab tests (the doctor helper).
const replayEveryEnv = "LANACCESS_REPLAY_EVERY"

// checkReplay replays the bundle a live run wrote, offline, and asserts the live verdicts and
// exit code. A run that could not start (exit 2 before reading anything) has no bundle.
func checkReplay(t *testing.T, command, bundle string, live result) {
	t.Helper()
	if _, err := os.Stat(bundle); err != nil {
		require.Equal(t, 2, live.Code, "a run that started writes its bundle: %s", live.Stderr)
		return
	}
	want, err := replay.Verdicts([]byte(live.Stdout))
	require.NoError(t, err)
	stdout, code := replayOffline(t, command, "-o", "json", "--replay", bundle)
	got, err := replay.Verdicts(stdout)
	require.NoError(t, err, "%s", stdout)
	assert.Equal(t, want, got, "the replay of this run gives its verdicts")
	assert.Equal(t, live.Code, code, "and its exit code")
}

// replayOffline runs the plugin in a new network namespace (nothing but a loopback that is
// down: no cluster, no network), with no kubeconfig.
func replayOffline(t *testing.T, args ...string) ([]byte, int) {
	t.Helper()
	bin, err := lanaccessBinary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--net", bin, "--kubeconfig", "/nonexistent"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes(), code
}

func saveCase(t *testing.T, dir, bundle, verdicts string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	raw, err := os.ReadFile(bundle)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bundle.gz"), raw, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "expect"), []byte(verdicts), 0o644))
}
