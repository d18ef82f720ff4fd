package netpath

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

func networkCatalogue(env *Env) []engine.Check {
	return []engine.Check{
		DNSAnswers(env), AAAANoData(env), Forwarding(env), NoClusterLeak(env),
		HTTPSAnswer(env), SamePathAnswer(env), LinkQuality(env),
	}
}

// networkFixture serves a healthy DNS and proxy on the nodes not listed in dead, and blackholes
// the others.
func networkFixture(t *testing.T, timeout time.Duration, dead ...int) (*netFixture, map[int]*probetest.Hole) {
	t.Helper()
	ca := probetest.NewCA(t)
	cert := ca.Issue(t, time.Now().Add(60*24*time.Hour), "*.apps.example.com")
	f := newNetFixture(t)
	f.cfg.Timeout = timeout
	f.cfg.HTTPS = &probe.HTTPSClient{Timeout: timeout, Roots: ca.Pool()}
	f.cfg.Resolver = stubResolver{err: errors.New("no such host")}
	holes := map[int]*probetest.Hole{}
	for i := range lanNodeIPs {
		if containsIndex(dead, i) {
			holes[i] = f.blackhole(i)
			continue
		}
		f.serveDNS(i, nil)
		f.serveHTTPS(i, probetest.HTTPSServer{Cert: cert, Handler: probetest.RedirectTo(http.StatusFound, idpLocation)})
	}
	return f, holes
}

func containsIndex(list []int, v int) bool {
	return slices.Contains(list, v)
}

func TestADeadNodeCostsOneTimeoutAcrossTheWholeNetworkCatalogue(t *testing.T) {
	const timeout = 500 * time.Millisecond
	f, holes := networkFixture(t, timeout, 2)
	runner := &engine.Runner{Checks: networkCatalogue(f.env()), Parallel: 4, DefaultTimeout: 30 * time.Second}
	start := time.Now()
	results := runner.Run(t.Context())
	t.Logf("wall time with one of three nodes dead: %s (probe timeout %s)", time.Since(start).Round(time.Millisecond), timeout)

	assert.LessOrEqual(t, holes[2].Contacts(), 3,
		"the dead address was contacted by one first probe per port only (:53: a UDP query and its retransmission; :443: one TCP connection)")
	for _, r := range results {
		switch r.ID {
		case "LA402": // the system resolver knows no second path: nothing compared
			assert.Equal(t, engine.StatusSkip, r.Status, "%s: %+v", r.ID, r.Findings)
		case "LA403":
			assert.Equal(t, engine.StatusPass, r.Status, "%s: %+v", r.ID, r.Findings)
		default:
			assert.Equal(t, engine.StatusFail, r.Status, "%s: %+v", r.ID, r.Findings)
			var dead []engine.Finding
			for _, fd := range r.Findings {
				if fd.Object == lanNode(2) {
					dead = append(dead, fd)
				}
				if fd.Severity == engine.SeverityFail {
					assert.Equal(t, lanNode(2), fd.Object, "%s blames only the dead node", r.ID)
				}
			}
			require.Len(t, dead, 1, "%s says the dead node once", r.ID)
			assert.Contains(t, dead[0].Message, "127.0.0.13 gave no answer")
		}
	}
}

func TestCancellingTheRunStopsEveryProbeAtOnce(t *testing.T) {
	f, holes := networkFixture(t, time.Minute, 0, 1, 2)
	runner := &engine.Runner{Checks: networkCatalogue(f.env()), Parallel: 4, DefaultTimeout: 10 * time.Minute}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []engine.Result, 1)
	go func() { done <- runner.Run(ctx) }()
	require.Eventually(t, func() bool {
		return holes[0].Contacts() > 0 && holes[1].Contacts() > 0 && holes[2].Contacts() > 0
	}, 10*time.Second, 5*time.Millisecond, "every address is being probed")
	cancel()
	select {
	case results := <-done:
		for _, r := range results {
			if r.Status == engine.StatusSkip && r.ID == "LA402" {
				continue // it asks no node address and may finish (nothing to compare) before the cancel
			}
			assert.Equal(t, engine.StatusError, r.Status, "%s: %s", r.ID, r.Reason)
			assert.Contains(t, r.Reason, "interrupted", r.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop after cancellation (probe timeout is a minute)")
	}
}
