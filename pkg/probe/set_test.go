package probe_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

func TestSetRedirectDialsTheStandInButRepliesNameTheServiceAddress(t *testing.T) {
	standIn := probetest.StartDNS(t, "127.0.0.11", healthyZone())
	meant := netip.MustParseAddrPort("127.0.0.11:53")
	set, err := probe.NewSet(probe.Config{Redirect: probetest.Redirect(map[netip.AddrPort]netip.AddrPort{meant: standIn})})
	require.NoError(t, err)
	r, err := set.Query(context.Background(), meant, "grafana.apps.example.com", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, meant, r.Server)
	assert.Len(t, r.Addrs(), 3)
}

// gauge is a DNS prober that records how many queries are in flight at once.
type gauge struct {
	now, max atomic.Int32
	hold     time.Duration
}

func (g *gauge) Query(_ context.Context, server netip.AddrPort, _ string, _ uint16, _ string) (*probe.DNSReply, error) {
	n := g.now.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(g.hold)
	g.now.Add(-1)
	return &probe.DNSReply{Server: server, Msg: new(dns.Msg)}, nil
}

func TestSetBoundsTheProbesInFlight(t *testing.T) {
	g := &gauge{hold: 20 * time.Millisecond}
	set, err := probe.NewSet(probe.Config{Parallel: 3, DNS: g})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			server := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 10, byte(i)}), 53)
			_, err := set.Query(context.Background(), server, "a.", dns.TypeA, "udp")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, g.max.Load(), int32(3))
	assert.Positive(t, g.max.Load())
}

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f[host], nil
}

func TestSetLookupHostUnmapsAndSorts(t *testing.T) {
	set, err := probe.NewSet(probe.Config{Resolver: fakeResolver{probeHost: {
		netip.MustParseAddr("::ffff:100.64.0.9"), netip.MustParseAddr("100.64.0.2"),
	}}})
	require.NoError(t, err)
	addrs, err := set.LookupHost(context.Background(), probeHost)
	require.NoError(t, err)
	assert.Equal(t, []string{"100.64.0.2", "100.64.0.9"}, probe.AddrStrings(addrs))
}

func TestLoadRoots(t *testing.T) {
	t.Run("no file means the system roots", func(t *testing.T) {
		pool, err := probe.LoadRoots("")
		require.NoError(t, err)
		assert.Nil(t, pool)
	})
	t.Run("a missing file is named", func(t *testing.T) {
		_, err := probe.LoadRoots("/nonexistent/ca.pem")
		require.ErrorContains(t, err, "/nonexistent/ca.pem")
	})
	t.Run("a file without a PEM certificate is refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ca.pem")
		require.NoError(t, os.WriteFile(path, []byte("not a certificate"), 0o600))
		_, err := probe.LoadRoots(path)
		require.ErrorContains(t, err, "no PEM certificate")
	})
	t.Run("a CA file verifies its certificates", func(t *testing.T) {
		ca := probetest.NewCA(t)
		set, err := probe.NewSet(probe.Config{CAFile: ca.WritePEM(t)})
		require.NoError(t, err)
		addr := probetest.StartHTTPS(t, "127.0.0.1", probetest.HTTPSServer{
			Cert: ca.Issue(t, time.Now().Add(time.Hour), probeHost), Handler: probetest.EchoHost(),
		})
		r, err := set.Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
		require.NoError(t, err)
		assert.True(t, r.TLS.Verified, r.TLS.VerifyError)
	})
}

func TestAddrSets(t *testing.T) {
	a := []netip.Addr{netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.11")}
	b := []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.11")}
	assert.True(t, probe.SameAddrs(a, b))
	missing, extra := probe.DiffAddrs(a, []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.99")})
	assert.Equal(t, []string{"10.0.10.12"}, probe.AddrStrings(missing))
	assert.Equal(t, []string{"10.0.10.99"}, probe.AddrStrings(extra))
	assert.Equal(t, "none", probe.JoinAddrs(nil))
	assert.Equal(t, 2*time.Millisecond, probe.Median([]time.Duration{5 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}))
	assert.Equal(t, 3*time.Millisecond, probe.Median([]time.Duration{4 * time.Millisecond, 2 * time.Millisecond}))
}

// countingHTTPS answers every Get after hold, counting the probes; a cancelled context ends it.
type countingHTTPS struct {
	calls atomic.Int32
	hold  time.Duration
}

func (c *countingHTTPS) Get(ctx context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error) {
	c.calls.Add(1)
	select {
	case <-time.After(c.hold):
		return &probe.HTTPSReply{Addr: req.Addr, Host: req.Host, Status: 302}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// LA401, LA402 and LA403 ask each address the same request: one probe answers them all; a
// different request is its own probe; an asker that gave up does not leave its error to others.
func TestSetSharesOneHTTPSProbePerRequest(t *testing.T) {
	fake := &countingHTTPS{hold: 50 * time.Millisecond}
	set, err := probe.NewSet(probe.Config{HTTPS: fake})
	require.NoError(t, err)
	req := probe.HTTPSRequest{Addr: netip.MustParseAddrPort("127.0.0.11:443"), Host: "grafana.apps.example.com", Requests: 3}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			r, err := set.Get(context.Background(), req)
			assert.NoError(t, err)
			assert.Equal(t, 302, r.Status)
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, fake.calls.Load(), "three askers, one probe")

	other := req
	other.Requests = 1
	_, err = set.Get(context.Background(), other)
	require.NoError(t, err)
	assert.EqualValues(t, 2, fake.calls.Load())

	fresh := req
	fresh.Host = "other.apps.example.com"
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err = set.Get(ctx, fresh)
	require.ErrorIs(t, err, context.Canceled)
	r, err := set.Get(context.Background(), fresh)
	require.NoError(t, err, "the cancelled probe is not the answer")
	assert.Equal(t, 302, r.Status)
	assert.EqualValues(t, 4, fake.calls.Load())
}

// goroutineQuery records the goroutine each question ran on (by its stack's first line).
type goroutineQuery struct {
	mu  sync.Mutex
	ids map[string]int
	die bool
}

func (g *goroutineQuery) Query(_ context.Context, server netip.AddrPort, _ string, _ uint16, _ string) (*probe.DNSReply, error) {
	if g.die {
		panic("prober bug")
	}
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id := strings.Fields(string(buf))[1] // "goroutine N [running]:"
	g.mu.Lock()
	g.ids[id]++
	g.mu.Unlock()
	return &probe.DNSReply{Server: server, Msg: new(dns.Msg)}, nil
}

func TestSetRunsProbesOnAFewWorkersThatEndWhenIdle(t *testing.T) {
	g := &goroutineQuery{ids: map[string]int{}}
	set, err := probe.NewSet(probe.Config{Parallel: 2, DNS: g})
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	server := netip.MustParseAddrPort("10.0.10.11:53")
	for range 50 {
		_, err := set.Query(context.Background(), server, "a.", dns.TypeA, "udp")
		require.NoError(t, err)
	}
	assert.Len(t, g.ids, 1, "questions asked one after the other reuse one worker")
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			_, err := set.Query(context.Background(), server, "a.", dns.TypeA, "udp")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, len(g.ids), 2, "never more workers than Parallel")
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before }, 2*time.Second, 10*time.Millisecond,
		"idle workers end")
}

func TestSetRaisesAProbersPanicInTheAskersGoroutine(t *testing.T) {
	set, err := probe.NewSet(probe.Config{Parallel: 1, DNS: &goroutineQuery{die: true}})
	require.NoError(t, err)
	server := netip.MustParseAddrPort("10.0.10.11:53")
	assert.PanicsWithValue(t, "prober bug", func() {
		_, _ = set.Query(context.Background(), server, "a.", dns.TypeA, "udp")
	})
	// The slot was given back: the next question is not stuck behind the panicked one.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	other := netip.MustParseAddrPort("10.0.10.12:53")
	assert.PanicsWithValue(t, "prober bug", func() { _, _ = set.Query(ctx, other, "a.", dns.TypeA, "udp") })
}

// gate is a DNS prober that holds each question until release is closed, and panics on the
// name "panic.".
type gate struct {
	release chan struct{}
	asked   chan string
}

func (g *gate) Query(_ context.Context, server netip.AddrPort, name string, _ uint16, _ string) (*probe.DNSReply, error) {
	g.asked <- name
	<-g.release
	if name == "panic." {
		panic("prober bug")
	}
	return &probe.DNSReply{Server: server, Msg: new(dns.Msg)}, nil
}

func TestSetQueuedProbeWhoseContextEndsNeverRuns(t *testing.T) {
	g := &gate{release: make(chan struct{}), asked: make(chan string, 4)}
	set, err := probe.NewSet(probe.Config{Parallel: 1, DNS: g})
	require.NoError(t, err)
	server := netip.MustParseAddrPort("10.0.10.11:53")
	first := make(chan error, 1)
	go func() {
		_, err := set.Query(context.Background(), server, "first.", dns.TypeA, "udp")
		first <- err
	}()
	require.Equal(t, "first.", <-g.asked)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = set.Query(ctx, server, "queued.", dns.TypeA, "udp")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the only worker is busy: the probe waits, then gives up")
	close(g.release)
	require.NoError(t, <-first)
	_, err = set.Query(context.Background(), server, "after.", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, "after.", <-g.asked, "the abandoned probe was never run")
}

func TestSetQueuedProbesRunAfterAPanic(t *testing.T) {
	g := &gate{release: make(chan struct{}), asked: make(chan string, 8)}
	set, err := probe.NewSet(probe.Config{Parallel: 1, DNS: g})
	require.NoError(t, err)
	server := netip.MustParseAddrPort("10.0.10.11:53")
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _ = set.Query(context.Background(), server, "panic.", dns.TypeA, "udp")
	}()
	require.Equal(t, "panic.", <-g.asked)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			other := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 10, byte(21 + i)}), 53)
			_, err := set.Query(context.Background(), other, "queued.", dns.TypeA, "udp")
			assert.NoError(t, err)
		})
	}
	wg.Go(func() {
		// Waits for the first contact with server, which panics: it then makes its own.
		_, err := set.Query(context.Background(), server, "same-address.", dns.TypeA, "udp")
		assert.NoError(t, err)
	})
	// Let them queue behind the panicking probe (they cannot run: one worker).
	time.Sleep(20 * time.Millisecond)
	assert.Empty(t, g.asked, "one worker: nothing else runs while it is busy")
	close(g.release)
	assert.Equal(t, "prober bug", <-panicked)
	wg.Wait()
	assert.Len(t, g.asked, 4, "the queued probes ran on the worker that replaced the panicked one")
}

// countingDNS answers every question, counting them, after an optional hold.
type countingDNS struct {
	calls atomic.Int32
	hold  time.Duration
}

func (c *countingDNS) Query(ctx context.Context, server netip.AddrPort, name string, _ uint16, _ string) (*probe.DNSReply, error) {
	c.calls.Add(1)
	select {
	case <-time.After(c.hold):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: []byte{10, 0, 10, 11}}}
	return &probe.DNSReply{Server: server, Msg: m}, nil
}

func TestSetSharesOneDNSQuestion(t *testing.T) {
	fake := &countingDNS{hold: 20 * time.Millisecond}
	set, err := probe.NewSet(probe.Config{DNS: fake})
	require.NoError(t, err)
	server := netip.MustParseAddrPort("10.0.10.11:53")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			r, err := set.Query(context.Background(), server, "apps.example.com.", dns.TypeA, "udp")
			assert.NoError(t, err)
			assert.Len(t, r.Addrs(), 1)
			r.Msg.Answer = nil // an asker may change its reply: the others keep theirs
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, fake.calls.Load(), "three askers, one question")

	r, err := set.Query(context.Background(), server, "apps.example.com.", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Len(t, r.Addrs(), 1, "a later asker gets the answer, untouched by the earlier askers")
	assert.EqualValues(t, 1, fake.calls.Load())

	for _, other := range []func() (*probe.DNSReply, error){
		func() (*probe.DNSReply, error) {
			return set.Query(context.Background(), server, "apps.example.com.", dns.TypeA, "tcp")
		},
		func() (*probe.DNSReply, error) {
			return set.Query(context.Background(), server, "apps.example.com.", dns.TypeAAAA, "udp")
		},
		func() (*probe.DNSReply, error) {
			return set.Query(context.Background(), netip.MustParseAddrPort("10.0.10.12:53"), "apps.example.com.", dns.TypeA, "udp")
		},
		func() (*probe.DNSReply, error) {
			// Forwarded: its outcome never decides liveness, so it is not the proving question's.
			return set.QueryForwarded(context.Background(), server, "apps.example.com.", dns.TypeA, "udp")
		},
	} {
		_, err := other()
		require.NoError(t, err)
	}
	assert.EqualValues(t, 5, fake.calls.Load(), "another transport, type, server or kind is its own question")

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	_, err = set.Query(ctx, server, "fresh.apps.example.com.", dns.TypeA, "udp")
	require.ErrorIs(t, err, context.Canceled)
	_, err = set.Query(context.Background(), server, "fresh.apps.example.com.", dns.TypeA, "udp")
	require.NoError(t, err, "the cancelled question is not the answer")
	assert.EqualValues(t, 7, fake.calls.Load())
}

func TestSetAPanickingProbeReleasesTheAskersSharingIt(t *testing.T) {
	g := &gate{release: make(chan struct{}), asked: make(chan string, 4)}
	set, err := probe.NewSet(probe.Config{Parallel: 2, DNS: g})
	require.NoError(t, err)
	server := netip.MustParseAddrPort("10.0.10.11:53")
	first := make(chan any, 1)
	go func() {
		defer func() { first <- recover() }()
		_, _ = set.Query(context.Background(), server, "panic.", dns.TypeA, "udp")
	}()
	require.Equal(t, "panic.", <-g.asked)
	second := make(chan any, 1)
	go func() {
		defer func() { second <- recover() }()
		_, _ = set.Query(context.Background(), server, "panic.", dns.TypeA, "udp")
	}()
	time.Sleep(10 * time.Millisecond) // the second asker waits on the first one's question
	close(g.release)
	assert.Equal(t, "prober bug", <-first)
	// The panicked question is forgotten: the second asker asks it itself (and meets the same bug).
	assert.Equal(t, "panic.", <-g.asked)
	assert.Equal(t, "prober bug", <-second)
}
