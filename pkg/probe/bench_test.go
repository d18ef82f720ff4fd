package probe_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

func BenchmarkDNSQuery(b *testing.B) {
	server := probetest.StartDNS(b, "127.0.0.1", healthyZone())
	c := &probe.DNSClient{Timeout: 2 * time.Second}
	for _, network := range []string{"udp", "tcp"} {
		b.Run(network, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Query(context.Background(), server, probeHost, dns.TypeA, network); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHTTPSGet(b *testing.B) {
	ca := probetest.NewCA(b)
	addr := probetest.StartHTTPS(b, "127.0.0.1", probetest.HTTPSServer{
		Cert:    ca.Issue(b, time.Now().Add(time.Hour), probeHost),
		Handler: probetest.RedirectTo(http.StatusFound, "https://idp.example.com/"),
	})
	c := &probe.HTTPSClient{Timeout: 2 * time.Second, Roots: ca.Pool()}
	for b.Loop() {
		if _, err := c.Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetQueryDeadAddress measures what a known-dead address costs each later question:
// the liveness record answers without touching the network.
func BenchmarkSetQueryDeadAddress(b *testing.B) {
	hole := probetest.Blackhole(b, "127.0.0.1")
	set, err := probe.NewSet(probe.Config{Timeout: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := set.Query(context.Background(), hole, probeHost, dns.TypeA, "udp"); !probe.IsNoAnswer(err) {
		b.Fatalf("first contact: want no answer, got %v", err)
	}
	for b.Loop() {
		if _, err := set.Query(context.Background(), hole, probeHost, dns.TypeA, "udp"); !probe.IsNotProbed(err) {
			b.Fatalf("want not probed, got %v", err)
		}
	}
}
