package facts

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real prober, against servers on loopback.
func TestTheNetworkProberTellsAcceptedRefusedAndDNSAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := netip.MustParseAddrPort(closed.Addr().String())
	require.NoError(t, closed.Close())

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	defer func() { _ = srv.Shutdown() }()

	var p NetProber
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ok := connectResult(ctx, p.Connect(ctx, netip.MustParseAddrPort(ln.Addr().String())), time.Second)
	assert.Equal(t, HopAnswered, ok.State)
	refused := connectResult(ctx, p.Connect(ctx, closedAddr), time.Second)
	assert.Equal(t, HopAnswered, refused.State)
	assert.Contains(t, refused.Detail, "refused")
	rcode, err := p.QueryA(ctx, netip.MustParseAddrPort(pc.LocalAddr().String()), "kubernetes.default.svc.cluster.local")
	require.NoError(t, err)
	assert.Equal(t, "NXDOMAIN", rcode)
	locals, err := p.LocalAddrs()
	require.NoError(t, err)
	assert.Contains(t, locals, netip.MustParseAddr("127.0.0.1"))
}

// The kernel picks the source address of a connected UDP socket without sending anything.
func TestTheNetworkProberAsksTheKernelForTheSourceAddress(t *testing.T) {
	var p NetProber
	src, err := p.SourceFor(netip.MustParseAddr("127.0.0.1"))
	require.NoError(t, err)
	assert.Equal(t, netip.MustParseAddr("127.0.0.1"), src)
	table, err := p.RoutingTable()
	require.NoError(t, err, "this test runs on Linux")
	assert.Contains(t, table, "Iface\tDestination\tGateway")
}

// The sweep is bounded: the fixed sizes, the interface MTU, one batch of refining sizes.
func TestTheMTUSweepIsBoundedAndStopsWhenTheSmallPacketFails(t *testing.T) {
	var n atomic.Int32
	batches := 0
	m := sweepMTU(9000, func(sizes []int) []SizeResult {
		batches++
		return eachSize(func(size int) SizeResult {
			n.Add(1)
			if size > 1000 && size%2 == 1 { // hostile: every odd size above 1000 vanishes
				return SizeResult{Size: size, State: SizeSilent}
			}
			return SizeResult{Size: size, State: SizePassed}
		})(sizes)
	})
	assert.LessOrEqual(t, int(n.Load()), len(mtuSweep)+1+mtuRefine)
	assert.LessOrEqual(t, batches, 2, "the fixed sweep, then one refinement")
	assert.Len(t, m.Sizes, int(n.Load()))
	m = sweepMTU(1500, eachSize(func(size int) SizeResult { return SizeResult{Size: size, State: SizeSilent} }))
	assert.Len(t, m.Sizes, 1, "a silent small packet is not an MTU question")
	assert.False(t, m.BlackHole())
}

// A black hole is narrowed in one round trip: evenly spaced sizes between the last size that
// passed and the first that vanished, none closer than mtuRefineStep.
func TestTheRefiningSizesLieBetweenAndAreBounded(t *testing.T) {
	assert.Equal(t, []int{1288, 1296, 1304, 1312, 1320, 1328, 1336, 1344, 1352}, refineSizes(1280, 1360))
	assert.Equal(t, []int{1288}, refineSizes(1280, 1296))
	assert.Empty(t, refineSizes(1280, 1288))
	assert.Empty(t, refineSizes(1280, 1200))
	for _, gap := range []int{1, 9, 17, 100, 1000, 60000} {
		sizes := refineSizes(576, 576+gap)
		assert.LessOrEqual(t, len(sizes), mtuRefine)
		for _, s := range sizes {
			assert.True(t, s > 576 && s < 576+gap, "%d in (576, %d)", s, 576+gap)
		}
	}
}

func TestAPaddedQuestionHasTheSizeAsked(t *testing.T) {
	for _, size := range []int{576, 1300, 1500} {
		wire, _, actual, err := paddedQuestion("kubernetes.default.svc.cluster.local", size)
		require.NoError(t, err)
		assert.Equal(t, size, len(wire)+28)
		assert.Equal(t, size, actual)
	}
	_, _, actual, err := paddedQuestion("kubernetes.default.svc.cluster.local", 84)
	require.NoError(t, err)
	assert.Equal(t, 97, actual, "the smallest question with its EDNS0 padding option")
}
