package facts

import (
	"context"
	"net"
	"net/netip"
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

// The sweep is bounded: the fixed sizes, the interface MTU, at most four bisections.
func TestTheMTUSweepIsBoundedAndStopsWhenTheSmallPacketFails(t *testing.T) {
	n := 0
	m := sweepMTU(9000, func(size int) SizeResult {
		n++
		if size > 1000 && size%2 == 1 { // hostile: every odd size above 1000 vanishes
			return SizeResult{Size: size, State: SizeSilent}
		}
		return SizeResult{Size: size, State: SizePassed}
	})
	assert.LessOrEqual(t, n, len(mtuSweep)+1+mtuRefine)
	assert.Equal(t, len(m.Sizes), n)
	n = 0
	m = sweepMTU(1500, func(size int) SizeResult { n++; return SizeResult{Size: size, State: SizeSilent} })
	assert.Equal(t, 1, n, "a silent small packet is not an MTU question")
	assert.False(t, m.BlackHole())
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
