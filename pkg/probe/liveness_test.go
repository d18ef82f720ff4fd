package probe_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

func netipAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s)
	require.NoError(t, err)
	return ap
}

func TestADeadAddressCostsOneTimeoutHoweverManyProbesAsk(t *testing.T) {
	server, asked := silentServer(t, "127.0.0.13")
	set, err := probe.NewSet(probe.Config{Timeout: 300 * time.Millisecond})
	require.NoError(t, err)

	const concurrent = 12
	errs := make([]error, concurrent)
	var wg sync.WaitGroup
	for i := range concurrent {
		wg.Go(func() {
			// Each question differs: the Set shares identical ones (TestSetSharesOneDNSQuestion).
			network := []string{"udp", "tcp"}[i%2]
			name := fmt.Sprintf("q%d.apps.example.com", i)
			_, errs[i] = set.Query(context.Background(), server, name, dns.TypeA, network)
		})
	}
	wg.Wait()
	// Later probes to the same address and port, of any type, are refused at once.
	_, lateDNS := set.Query(context.Background(), server, "apps.example.com", dns.TypeAAAA, "udp")

	firstContacts, notProbed := 0, 0
	for _, err := range append(errs, lateDNS) {
		require.Error(t, err)
		assert.True(t, probe.IsNoAnswer(err), "every caller learns the address did not answer: %v", err)
		if probe.IsNotProbed(err) {
			notProbed++
		} else {
			firstContacts++
		}
	}
	assert.Equal(t, 1, firstContacts, "only the first contact waited for its timeout")
	assert.Equal(t, concurrent, notProbed)
	assert.LessOrEqual(t, asked.Load(), int32(2), "the server saw the first contact only (query + one retransmission)")
	dead := set.Dead(server)
	require.NotNil(t, dead)
	assert.Contains(t, dead.Error(), "not probed: 127.0.0.13 gave no answer within 300ms")

	// Another port of the same address is its own first contact: kube-proxy sends each Service
	// port to its own pods, so a silent :53 says nothing about :443.
	_, otherPort := set.Get(context.Background(), probe.HTTPSRequest{Addr: netip.AddrPortFrom(server.Addr(), 443), Host: "x"})
	assert.False(t, probe.IsNotProbed(otherPort), "%v", otherPort)
	assert.Nil(t, set.Dead(netip.AddrPortFrom(server.Addr(), 443)))
}

func TestLiveness(t *testing.T) {
	addr := netip.MustParseAddrPort("10.0.10.12:53")
	noAnswer := &probe.NoAnswerError{Target: addr, Network: "udp", What: "A x.", Within: time.Second, Err: context.DeadlineExceeded}

	t.Run("an address that answered stays alive after a later timeout", func(t *testing.T) {
		l := probe.NewLiveness()
		require.NoError(t, l.Do(context.Background(), addr, func(context.Context) error { return nil }))
		err := l.Do(context.Background(), addr, func(context.Context) error { return noAnswer })
		assert.ErrorIs(t, err, noAnswer)
		var ran bool
		require.NoError(t, l.Do(context.Background(), addr, func(context.Context) error { ran = true; return nil }))
		assert.True(t, ran)
		assert.Nil(t, l.Dead(addr))
	})
	t.Run("a refusal marks the address alive: the host answered", func(t *testing.T) {
		l := probe.NewLiveness()
		refused := errors.New("connection refused")
		assert.ErrorIs(t, l.Do(context.Background(), addr, func(context.Context) error { return refused }), refused)
		assert.Nil(t, l.Dead(addr))
	})
	t.Run("an interrupted first contact leaves the verdict to the next prober", func(t *testing.T) {
		l := probe.NewLiveness()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := l.Do(ctx, addr, func(ctx context.Context) error { return ctx.Err() })
		assert.ErrorIs(t, err, context.Canceled)
		var ran bool
		require.NoError(t, l.Do(context.Background(), addr, func(context.Context) error { ran = true; return nil }))
		assert.True(t, ran)
	})
	t.Run("a waiter whose context ends stops waiting for the first contact", func(t *testing.T) {
		l := probe.NewLiveness()
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_ = l.Do(context.Background(), addr, func(context.Context) error { close(started); <-release; return nil })
		}()
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var ran atomic.Bool
		err := l.Do(ctx, addr, func(context.Context) error { ran.Store(true); return nil })
		assert.ErrorIs(t, err, context.Canceled)
		assert.False(t, ran.Load())
		close(release)
	})
	t.Run("other addresses are not held back by a first contact in flight", func(t *testing.T) {
		l := probe.NewLiveness()
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_ = l.Do(context.Background(), addr, func(context.Context) error { close(started); <-release; return nil })
		}()
		<-started
		other := netip.MustParseAddrPort("10.0.10.11:53")
		require.NoError(t, l.Do(context.Background(), other, func(context.Context) error { return nil }))
		close(release)
	})
}

func TestAForwardedQuestionsSilenceDoesNotWriteTheAddressOff(t *testing.T) {
	l := probe.NewLiveness()
	addr := netip.MustParseAddrPort("10.0.10.11:53")
	silent := func(context.Context) error { return &probe.NoAnswerError{Target: addr, Network: "udp"} }
	err := l.DoUndecided(context.Background(), addr, silent)
	var na *probe.NoAnswerError
	require.ErrorAs(t, err, &na, "the forwarded question's own failure is returned")
	assert.Nil(t, l.Dead(addr), "a forwarded name timing out says nothing about the address")

	require.NoError(t, l.Do(context.Background(), addr, func(context.Context) error { return nil }))
	require.ErrorAs(t, l.DoUndecided(context.Background(), addr, silent), &na, "alive: a later forwarded timeout is a per-query failure")
	assert.Nil(t, l.Dead(addr))

	dead := netip.MustParseAddrPort("10.0.10.12:53")
	_ = l.Do(context.Background(), dead, func(context.Context) error { return &probe.NoAnswerError{Target: dead, Network: "udp"} })
	var np *probe.NotProbedError
	assert.ErrorAs(t, l.DoUndecided(context.Background(), dead, silent), &np, "a dead address is not asked again")
}
