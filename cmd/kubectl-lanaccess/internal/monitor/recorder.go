package monitor

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// Kind is what was asked of an address: a metric label value, from this fixed set only.
type Kind string

// The probe kinds of one address.
const (
	KindDNSUDP Kind = "dns_udp"
	KindDNSTCP Kind = "dns_tcp"
	KindHTTPS  Kind = "https"
)

// Kinds lists the probe kinds in the order logs and dashboards show them.
var Kinds = []Kind{KindDNSUDP, KindDNSTCP, KindHTTPS}

// recorder is the prober the checks of one run use: it passes every question to the run's
// probe.Set and notes, for the addresses of the path, what each probe gave. The checks stay
// the only judges; the recorder only measures what they asked. Questions the address answers
// for another server (a name outside the zone, forwarded) say nothing about the address and
// are not noted; nor are probes the Set skipped (a dead address is asked once), beyond the
// failure they stand for.
type recorder struct {
	inner netpath.Prober

	mu      sync.Mutex
	zone    zone.Zone // zero = nothing is noted yet
	host    string
	tracked map[netip.Addr]bool
	probes  map[probeKey]*probeObs
	answers []answerObs
	https   map[probe.HTTPSRequest]bool
	certs   map[netip.Addr]time.Time
	shakes  map[netip.Addr]time.Duration
}

type probeKey struct {
	addr netip.Addr
	kind Kind
}

// probeObs is what the probes of one kind to one address gave in a run.
type probeObs struct {
	ok, failed int
	durations  []time.Duration
	lastErr    error
}

// answerObs is one A answer of a zone's name from one server.
type answerObs struct {
	server netip.Addr
	name   string
	addrs  []netip.Addr
}

func newRecorder(inner netpath.Prober) *recorder {
	return &recorder{inner: inner, probes: map[probeKey]*probeObs{}, https: map[probe.HTTPSRequest]bool{},
		certs: map[netip.Addr]time.Time{}, shakes: map[netip.Addr]time.Duration{}}
}

// watch starts noting the probes to addrs for zone and the probe host (before the checks run).
func (r *recorder) watch(p netpath.Path, addrs []netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.zone = p.Zone
	r.host = p.Host.Name
	r.tracked = map[netip.Addr]bool{}
	for _, a := range addrs {
		r.tracked[a] = true
	}
}

func (r *recorder) Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	start := time.Now()
	reply, err := r.inner.Query(ctx, server, name, qtype, network)
	r.noteDNS(ctx, server, name, qtype, network, reply, err, time.Since(start))
	return reply, err
}

// QueryForwarded is not noted: its silence is the upstream's.
func (r *recorder) QueryForwarded(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	return r.inner.QueryForwarded(ctx, server, name, qtype, network)
}

func (r *recorder) Get(ctx context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error) {
	start := time.Now()
	reply, err := r.inner.Get(ctx, req)
	r.noteHTTPS(ctx, req, reply, err, time.Since(start))
	return reply, err
}

func (r *recorder) LookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return r.inner.LookupHost(ctx, host)
}

func (r *recorder) Timeout() time.Duration { return r.inner.Timeout() }

func (r *recorder) noteDNS(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string, reply *probe.DNSReply, err error, wall time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tracked[server.Addr()] || !r.zone.Contains(name) {
		return
	}
	kind := KindDNSUDP
	if network == "tcp" {
		kind = KindDNSTCP
	}
	if !r.note(ctx, probeKey{server.Addr(), kind}, err, wall, func() time.Duration { return reply.RTT }) {
		return
	}
	if err == nil && qtype == dns.TypeA {
		r.answers = append(r.answers, answerObs{server: server.Addr(), name: strings.ToLower(name), addrs: aRecords(reply)})
	}
}

// noteHTTPS notes each request once: the Set answers the checks that ask the same request with
// one connection, and its timings are that connection's.
func (r *recorder) noteHTTPS(ctx context.Context, req probe.HTTPSRequest, reply *probe.HTTPSReply, err error, wall time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tracked[req.Addr.Addr()] || req.Host != r.host || r.https[req] {
		return
	}
	taken := func() time.Duration {
		return reply.Timings.Connect + reply.Timings.Handshake + reply.Timings.FirstByte
	}
	if !r.note(ctx, probeKey{req.Addr.Addr(), KindHTTPS}, err, wall, taken) {
		return
	}
	r.https[req] = true
	if err == nil {
		r.shakes[req.Addr.Addr()] = reply.Timings.Handshake
		if !reply.TLS.NotAfter.IsZero() {
			r.certs[req.Addr.Addr()] = reply.TLS.NotAfter
		}
	}
}

// note records one probe's outcome; it returns false for a probe that says nothing (the run
// was interrupted). A probe the Set skipped for a dead address counts as a failure without a
// duration: nothing was sent.
func (r *recorder) note(ctx context.Context, key probeKey, err error, wall time.Duration, taken func() time.Duration) bool {
	if err != nil && ctx.Err() != nil {
		return false
	}
	obs := r.probes[key]
	if obs == nil {
		obs = &probeObs{}
		r.probes[key] = obs
	}
	var na *probe.NoAnswerError
	switch {
	case err == nil:
		obs.ok++
		if d := taken(); d > 0 {
			wall = d
		}
		obs.durations = append(obs.durations, wall)
	case probe.IsNotProbed(err):
		obs.failed++
		obs.lastErr = err
	case errors.As(err, &na):
		obs.failed++
		obs.lastErr = err
		obs.durations = append(obs.durations, na.Within)
	default:
		obs.failed++
		obs.lastErr = err
		obs.durations = append(obs.durations, wall)
	}
	return true
}

// aRecords are the IPv4 addresses of an answer, sorted, without duplicates.
func aRecords(reply *probe.DNSReply) []netip.Addr {
	var out []netip.Addr
	for _, a := range reply.Addrs() {
		if a.Is4() {
			out = append(out, a)
		}
	}
	return probe.SortAddrs(out)
}

// observations is what the run noted, once its checks are done.
type observations struct {
	probes  map[probeKey]*probeObs
	answers []answerObs
	certs   map[netip.Addr]time.Time
	shakes  map[netip.Addr]time.Duration
}

func (r *recorder) observations() observations {
	r.mu.Lock()
	defer r.mu.Unlock()
	return observations{probes: r.probes, answers: r.answers, certs: r.certs, shakes: r.shakes}
}
