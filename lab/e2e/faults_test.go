//go:build lab

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

// Each fault injector really changes the lab, and its cleanup really undoes it.

func TestLinkDownSilencesANodeUntilRestored(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		lab.LinkDown(t, "node-3")
		_, err := query("10.0.10.13", probeHost, dns.TypeA, "udp")
		assert.Error(t, err, "node-3 is unplugged")
		assert.False(t, lab.Ping("", "10.0.10.13", time.Second))
	})
	eventually(t, 10*time.Second, func() error {
		_, err := query("10.0.10.13", probeHost, dns.TypeA, "udp")
		return err
	})
}

var rttPattern = regexp.MustCompile(`time=([0-9.]+) ms`)

func pingRTT(t *testing.T, ip string) time.Duration {
	t.Helper()
	out, err := exec.Command("ping", "-n", "-c", "1", "-W", "3", ip).Output()
	require.NoError(t, err, "ping %s", ip)
	m := rttPattern.FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	ms, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return time.Duration(ms * float64(time.Millisecond))
}

func TestAddLatencySlowsOnlyThatNode(t *testing.T) {
	t.Run("delayed", func(t *testing.T) {
		lab.AddLatency(t, "node-1", 300*time.Millisecond)
		assert.GreaterOrEqual(t, pingRTT(t, "10.0.10.11"), 290*time.Millisecond)
		assert.Less(t, pingRTT(t, "10.0.10.12"), 100*time.Millisecond)
	})
	assert.Less(t, pingRTT(t, "10.0.10.11"), 100*time.Millisecond, "cleanup removed the delay")
}

func TestStartListenerBindsARealProcessOnTheNodeAddress(t *testing.T) {
	t.Run("listening", func(t *testing.T) {
		lab.StartListener(t, "node-2", 53, "udp")
		out := lab.MustExec(t, "node-2", "ss", "-Hlunp", "src", "10.0.10.12:53")
		assert.Contains(t, out, "10.0.10.12:53")
		assert.Contains(t, out, `"lab"`, "the owning process is visible")
	})
	out := lab.MustExec(t, "node-2", "ss", "-Hlun", "src", "10.0.10.12:53")
	assert.NotContains(t, out, "10.0.10.12:53", "cleanup stopped the listener")
}

func TestServeWrongCertificateBreaksVerificationAndIsRestored(t *testing.T) {
	for kind, want := range map[labkit.CertKind]string{
		// Traefik serves a route's certificate only for the names it covers; for grafana's name
		// it falls back to its own default certificate (traefik v3.7.9 pkg/tls
		// certificate_store.go GetBestCertificate), whose name is a random *.traefik.default.
		labkit.CertWrongHost: ".traefik.default, not grafana.apps.example.com",
		labkit.CertExpired:   "certificate has expired",
		labkit.CertUnknownCA: "certificate signed by unknown authority",
	} {
		t.Run(string(kind), func(t *testing.T) {
			lab.ServeWrongCertificate(t, kind)
			eventually(t, 10*time.Second, func() error {
				_, err := httpsVia(probeHost, "10.0.10.11", 3*time.Second)
				if err == nil {
					return fmt.Errorf("still served a valid certificate")
				}
				if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(err.Error()) {
					return fmt.Errorf("got %v, want %q", err, want)
				}
				return nil
			})
		})
	}
	eventually(t, 10*time.Second, func() error {
		_, err := httpsVia(probeHost, "10.0.10.11", 3*time.Second)
		return err
	})
}

func TestSwapRBACGivesAKubeconfigWithExactlyItsGrants(t *testing.T) {
	kubeconfig := lab.SwapRBAC(t, "pods-reader", labkit.Grant{Rules: labkit.ReadOnlyRules("pods")})
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, lab.KubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := run("get", "pods", "-A")
	require.NoError(t, err, out)
	assert.Contains(t, out, "lan-dns")
	out, err = run("get", "secrets", "-A")
	require.Error(t, err)
	assert.Contains(t, out, "forbidden")
}

func TestClusterFirstOnTheZoneDNSLeaksClusterNames(t *testing.T) {
	lab.SetDNSPolicy(t, "traefik", "lan-dns", corev1.DNSClusterFirst)
	eventually(t, 15*time.Second, func() error {
		r, err := query("10.0.10.11", "kubernetes.default.svc.cluster.local", dns.TypeA, "udp")
		if err != nil {
			return err
		}
		if got := aRecords(r); len(got) != 1 || got[0] != "10.96.0.1" {
			return fmt.Errorf("answers %v rcode %s, want the kubernetes Service VIP", got, dns.RcodeToString[r.Rcode])
		}
		return nil
	})
}
