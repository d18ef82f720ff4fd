package probe_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
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

var lanAddrs = []netip.Addr{
	netip.MustParseAddr("10.0.10.13"), netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12"),
}

func healthyZone() *probetest.Zone {
	return &probetest.Zone{Zone: "apps.example.com.", Addrs: lanAddrs, TTL: 60}
}

func TestDNSClient(t *testing.T) {
	sorted := probe.SortAddrs(append([]netip.Addr{}, lanAddrs...))
	tests := []struct {
		name    string
		zone    func(z *probetest.Zone)
		qname   string
		qtype   uint16
		network string
		check   func(t *testing.T, r *probe.DNSReply)
	}{
		{
			name:  "an A question over UDP is answered as a sorted set with its TTL and the AA flag",
			qname: "grafana.apps.example.com", qtype: dns.TypeA, network: "udp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.Equal(t, sorted, r.Addrs())
				ttl, ok := r.MinTTL()
				assert.True(t, ok)
				assert.Equal(t, uint32(60), ttl)
				assert.True(t, r.Authoritative())
				assert.Equal(t, "udp", r.Network)
				assert.False(t, r.Truncated)
				assert.Equal(t, 1, r.Attempts)
			},
		},
		{
			name:  "an A question over TCP gets the same set",
			qname: "apps.example.com", qtype: dns.TypeA, network: "tcp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.Equal(t, sorted, r.Addrs())
				assert.Equal(t, "tcp", r.Network)
			},
		},
		{
			name:  "a truncated UDP answer is asked again over TCP",
			zone:  func(z *probetest.Zone) { z.TruncateUDP = true },
			qname: "grafana.apps.example.com", qtype: dns.TypeA, network: "udp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.True(t, r.Truncated)
				assert.Equal(t, "tcp", r.Network)
				assert.Equal(t, sorted, r.Addrs())
			},
		},
		{
			name:  "SERVFAIL is an answer with its rcode, not an error",
			zone:  func(z *probetest.Zone) { z.Rcode = dns.RcodeServerFailure },
			qname: "grafana.apps.example.com", qtype: dns.TypeA, network: "udp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.Equal(t, dns.RcodeServerFailure, r.Rcode())
				assert.Equal(t, "SERVFAIL", r.RcodeName())
				assert.Empty(t, r.Addrs())
			},
		},
		{
			name:  "AAAA in the zone is NODATA: NOERROR without a record",
			qname: "grafana.apps.example.com", qtype: dns.TypeAAAA, network: "udp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.True(t, r.NoData(dns.TypeAAAA))
				assert.False(t, r.NXDomain())
				_, ok := r.MinTTL()
				assert.False(t, ok)
			},
		},
		{
			name:  "AAAA without the ANY template is NXDOMAIN, told apart from NODATA",
			zone:  func(z *probetest.Zone) { z.OtherTypesRcode = dns.RcodeNameError },
			qname: "grafana.apps.example.com", qtype: dns.TypeAAAA, network: "udp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.True(t, r.NXDomain())
				assert.False(t, r.NoData(dns.TypeAAAA))
				assert.Equal(t, "NXDOMAIN", r.RcodeName())
			},
		},
		{
			name:  "a name outside the zone that the forwarder does not know is NXDOMAIN",
			qname: "kubernetes.default.svc.cluster.local", qtype: dns.TypeA, network: "udp",
			check: func(t *testing.T, r *probe.DNSReply) {
				t.Helper()
				assert.True(t, r.NXDomain())
				assert.False(t, r.Authoritative())
				assert.True(t, r.RecursionAvailable())
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := healthyZone()
			if tc.zone != nil {
				tc.zone(z)
			}
			server := probetest.StartDNS(t, "127.0.0.1", z)
			c := &probe.DNSClient{Timeout: 2 * time.Second}
			r, err := c.Query(context.Background(), server, tc.qname, tc.qtype, tc.network)
			require.NoError(t, err)
			assert.Equal(t, server, r.Server)
			tc.check(t, r)
		})
	}
}

func TestDNSClientSendsEDNS0(t *testing.T) {
	var seen atomic.Uint32
	server := probetest.StartDNS(t, "127.0.0.1", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if opt := r.IsEdns0(); opt != nil {
			seen.Store(uint32(opt.UDPSize()))
		}
		m := new(dns.Msg)
		_ = w.WriteMsg(m.SetReply(r))
	}))
	_, err := (&probe.DNSClient{}).Query(context.Background(), server, "a.example.", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, uint32(probe.DefaultEDNSBufferSize), seen.Load())
}

func TestDNSClientWrongMessageID(t *testing.T) {
	z := healthyZone()
	z.WrongID = true
	server := probetest.StartDNS(t, "127.0.0.1", z)
	c := &probe.DNSClient{Timeout: 300 * time.Millisecond}

	t.Run("over UDP the stray replies are ignored and reported once no matching reply came", func(t *testing.T) {
		_, err := c.Query(context.Background(), server, "grafana.apps.example.com", dns.TypeA, "udp")
		var wrong *probe.WrongIDError
		require.ErrorAs(t, err, &wrong)
		assert.Equal(t, wrong.Want+1, wrong.Got)
		assert.False(t, probe.IsNoAnswer(err), "a server that answers with a wrong ID is alive")
	})
	t.Run("over TCP a reply with another ID is an error at once", func(t *testing.T) {
		_, err := c.Query(context.Background(), server, "grafana.apps.example.com", dns.TypeA, "tcp")
		var wrong *probe.WrongIDError
		require.ErrorAs(t, err, &wrong)
	})
}

// silentServer reads questions and never answers, counting them.
func silentServer(t *testing.T, ip string) (netip.AddrPort, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	ap := probetest.StartDNS(t, ip, dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) { n.Add(1) }))
	return ap, &n
}

func TestDNSClientNoAnswer(t *testing.T) {
	server, asked := silentServer(t, "127.0.0.1")
	c := &probe.DNSClient{Timeout: 300 * time.Millisecond}
	_, err := c.Query(context.Background(), server, "grafana.apps.example.com", dns.TypeA, "udp")
	var na *probe.NoAnswerError
	require.ErrorAs(t, err, &na)
	assert.Equal(t, server, na.Target)
	assert.Equal(t, "udp", na.Network)
	assert.Contains(t, na.Error(), "A grafana.apps.example.com.")
	assert.Equal(t, int32(2), asked.Load(), "one query and one retransmission within the deadline")
}

func TestDNSClientRefused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	require.NoError(t, pc.Close())

	c := &probe.DNSClient{Timeout: 2 * time.Second}
	_, err = c.Query(context.Background(), closed, "grafana.apps.example.com", dns.TypeA, "udp")
	require.Error(t, err)
	assert.True(t, probe.IsRefused(err), "ICMP port unreachable is a refusal: %v", err)
	assert.False(t, probe.IsNoAnswer(err))
}

func TestDNSClientCancelStopsAQueryAtOnce(t *testing.T) {
	server, asked := silentServer(t, "127.0.0.1")
	c := &probe.DNSClient{Timeout: time.Minute}
	for _, network := range []string{"udp", "tcp"} {
		t.Run("over "+network, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			before := asked.Load()
			go func() {
				_, err := c.Query(ctx, server, "grafana.apps.example.com", dns.TypeA, network)
				done <- err
			}()
			require.Eventually(t, func() bool { return asked.Load() > before }, 10*time.Second, 5*time.Millisecond,
				"the question reached the server")
			cancel()
			select {
			case err := <-done:
				require.Error(t, err)
				assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
				assert.False(t, probe.IsNoAnswer(err), "an interruption says nothing about the address")
			case <-time.After(30 * time.Second):
				t.Fatal("the query ignored the cancelled context")
			}
		})
	}
}

func TestDNSClientRejectsUnknownNetwork(t *testing.T) {
	_, err := (&probe.DNSClient{}).Query(context.Background(), netip.MustParseAddrPort("127.0.0.1:53"), "a.", dns.TypeA, "sctp")
	require.ErrorContains(t, err, `unknown network "sctp"`)
}

// With ReuseSockets, questions to one server go out of one socket (one source port) once the
// exchanges are clean; a late duplicate of the previous answer is not a wrong reply.
func TestDNSClientReusesSocketsAndIgnoresLateDuplicates(t *testing.T) {
	var mu sync.Mutex
	ports := map[string]int{}
	first := true
	server := probetest.StartDNS(t, "127.0.0.1", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		mu.Lock()
		ports[w.RemoteAddr().String()]++
		dup := first
		first = false
		mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(r)
		_ = w.WriteMsg(m)
		if dup {
			_ = w.WriteMsg(m) // the network delivered the first answer twice
		}
	}))
	for _, reuse := range []bool{true, false} {
		mu.Lock()
		clear(ports)
		first = true
		mu.Unlock()
		c := &probe.DNSClient{Timeout: 2 * time.Second, ReuseSockets: reuse}
		for i := range 5 {
			r, err := c.Query(context.Background(), server, "grafana.apps.example.com", dns.TypeA, "udp")
			require.NoError(t, err)
			assert.Zero(t, r.MismatchedIDs, "reuse=%v question %d", reuse, i)
		}
		c.CloseIdle()
		mu.Lock()
		if reuse {
			assert.Len(t, ports, 1, "one socket for five questions")
		} else {
			assert.Len(t, ports, 5, "a socket per question")
		}
		mu.Unlock()
	}
}

// A late copy of an earlier answer may reach a kept socket after the answers to later
// questions (the server answers each question on its own goroutine): it is skipped, not
// counted as a wrong reply, and the socket stays in use.
func TestDNSClientSkipsALateCopyOfAnyEarlierAnswer(t *testing.T) {
	var mu sync.Mutex
	ports := map[string]int{}
	var kept []*dns.Msg // every answer sent, oldest first
	server := probetest.StartDNS(t, "127.0.0.1", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		mu.Lock()
		ports[w.RemoteAddr().String()]++
		if len(kept) == 3 {
			// Before the fourth answer, copies of the first and second (a reordering network).
			_ = w.WriteMsg(kept[0])
			_ = w.WriteMsg(kept[1])
		}
		kept = append(kept, m)
		mu.Unlock()
		_ = w.WriteMsg(m)
	}))
	c := &probe.DNSClient{Timeout: 2 * time.Second, ReuseSockets: true}
	defer c.CloseIdle()
	for i := range 6 {
		r, err := c.Query(context.Background(), server, "grafana.apps.example.com", dns.TypeA, "udp")
		require.NoError(t, err)
		assert.Zero(t, r.MismatchedIDs, "question %d", i)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, ports, 1, "one socket for six questions")
	assert.Len(t, kept, 6)
}
