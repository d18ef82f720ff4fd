package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
)

// noCluster fails the test if anything asks for cluster clients: doctor with --addresses must
// never read the cluster, nor even a kubeconfig.
func noCluster(t *testing.T) clientFactory {
	t.Helper()
	return func(*kubeFlags, time.Duration) (*clients, error) {
		t.Errorf("doctor --addresses asked for cluster clients")
		return nil, usageErr("no cluster in this test")
	}
}

// runOfflineDoctor runs doctor with args against the stand-in LAN, as RunE does, with the
// probes aimed at the stand-ins.
func runOfflineDoctor(t *testing.T, lan *probetest.LAN, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	f := NewDoctorFlags()
	cmd := &cobra.Command{Use: "doctor"}
	f.AddFlags(cmd)
	require.NoError(t, cmd.ParseFlags(args))
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o, err := f.ToOptions(cmd, newKubeFlags(), noCluster(t))
	if err == nil {
		o.Probes = lan.ProbeConfig(time.Second)
		err = o.Run(t.Context(), streams)
	}
	if Printable(err) {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), ExitCode(err)
}

func TestDoctorWithAddressesChecksThePathsWithoutTheCluster(t *testing.T) {
	lan := probetest.NewLAN(t)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "does-not-exist"))
	out, errOut, code := runOfflineDoctor(t, lan, "--addresses", strings.Join(lan.Addrs, ","), "--zone", probetest.LANZone,
		"--host", probetest.LANHost, "--expect-location", "login.example.com", "--ca-file", lan.CAFile, "-o", "json")
	require.Equal(t, ExitOK, code, errOut+out)
	doc := decode(t, out)
	require.Len(t, doc.Checks, len(catalogue.ForCommand(catalogue.Doctor)), "every check of the catalogue is reported")
	for _, c := range doc.Checks {
		switch {
		case c.ID == "LA402": // the tests' resolver knows no second path: nothing compared
			assert.Equal(t, "skip", c.Status, c.ID)
			assert.Contains(t, c.Reason, "no second path to compare", c.ID)
		case strings.HasPrefix(c.ID, "LA3"), strings.HasPrefix(c.ID, "LA4"):
			assert.Equal(t, "pass", c.Status, "%s: %s %+v", c.ID, c.Reason, c.Findings)
		default:
			assert.Equal(t, "skip", c.Status, c.ID)
			assert.Contains(t, c.Reason, "needs the Kubernetes API", c.ID)
		}
	}
}

// Without --host and without the API, no route names the probe host: the HTTPS path checks
// SKIP asking for --host (the apex would fail LA401 on a healthy setup) while the DNS path
// checks still judge the zone.
func TestDoctorWithAddressesWithoutHostAsksForIt(t *testing.T) {
	lan := probetest.NewLAN(t)
	out, errOut, code := runOfflineDoctor(t, lan, "--addresses", strings.Join(lan.Addrs, ","), "--zone", probetest.LANZone,
		"--ca-file", lan.CAFile, "--only", "LA3,LA4", "-o", "json")
	require.Equal(t, ExitOK, code, errOut+out)
	doc := decode(t, out)
	require.NotEmpty(t, doc.Checks)
	for _, c := range doc.Checks {
		switch catalogue.Get(c.ID).Section {
		case catalogue.HTTPSPath:
			assert.Equal(t, "skip", c.Status, c.ID)
			assert.Contains(t, c.Reason, "needs --host", c.ID)
			assert.Contains(t, c.Reason, "--host grafana."+probetest.LANZone, c.ID)
		default:
			assert.Equal(t, "pass", c.Status, "%s: %s %+v", c.ID, c.Reason, c.Findings)
		}
	}
}

func TestDoctorWithAddressesNamesTheDeadAddress(t *testing.T) {
	lan := probetest.NewLAN(t)
	lan.Cut("10.0.10.12")
	out, errOut, code := runOfflineDoctor(t, lan, "--addresses", "10.0.10.11,10.0.10.12,10.0.10.13", "--zone", probetest.LANZone,
		"--host", probetest.LANHost, "--only", "LA301,LA401", "-o", "json")
	require.Equal(t, ExitFailed, code, errOut+out)
	for _, c := range decode(t, out).Checks {
		require.Equal(t, "fail", c.Status, c.ID)
		var objects []string
		for _, f := range c.Findings {
			if f.Severity == "fail" {
				objects = append(objects, f.Object)
			}
		}
		assert.Equal(t, []string{"10.0.10.12"}, objects, "%s names the dead address only", c.ID)
	}
}

func TestDoctorWithAddressesTakesThemFromTheConfigFile(t *testing.T) {
	lan := probetest.NewLAN(t)
	cfg := filepath.Join(t.TempDir(), "lanaccess.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("addresses: [10.0.10.11, 10.0.10.12, 10.0.10.13]\nzone: apps.example.com\nhost: grafana.apps.example.com\nexpect-status: 302\nexpect-location: login.example.com\nonly: [LA301]\noutput: json\n"), 0o600))
	out, errOut, code := runOfflineDoctor(t, lan, "--config", cfg)
	require.Equal(t, ExitOK, code, errOut+out)
	doc := decode(t, out)
	require.Len(t, doc.Checks, 1)
	assert.Equal(t, "pass", doc.Checks[0].Status)
}

func TestDoctorWithAddressesRefusesBadUsageWithExitTwo(t *testing.T) {
	lan := probetest.NewLAN(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addresses", "10.0.10.11"}, "--addresses needs --zone"},
		{[]string{"--addresses", "10.0.10.11", "--zone", probetest.LANZone, "--dns-service", "lan-dns/lan-dns"}, "give one or the other"},
		{[]string{"--addresses", "10.0.10.11,10.0.10.11", "--zone", probetest.LANZone}, "listed twice"},
		{[]string{"--addresses", "010.0.10.11", "--zone", probetest.LANZone}, "not an IP address"},
		{[]string{"--addresses", "::ffff:10.0.10.11", "--zone", probetest.LANZone}, "write it as 10.0.10.11"},
		{[]string{"--addresses", "fe80::1%eth0", "--zone", probetest.LANZone}, "scope"},
		{[]string{"--addresses", "127.0.0.1", "--zone", probetest.LANZone}, "not a node's LAN address"},
		{[]string{"--addresses", "2001:DB8:0::1", "--zone", probetest.LANZone}, "write it as 2001:db8::1"},
		{[]string{"--addresses", "grafana", "--zone", probetest.LANZone}, "not an IP address"},
		{[]string{"--addresses", "10.0.10.11", "--zone", probetest.LANZone, "--host", "grafana.example.org"}, "not in the zone"},
		{[]string{"--addresses", "10.0.10.11", "--zone", "apps example"}, "--zone"},
	} {
		_, errOut, code := runOfflineDoctor(t, lan, tc.args...)
		assert.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}
