// Package probe asks the network what a workstation would see: DNS questions to one server over
// UDP and TCP (miekg/dns), HTTPS requests pinned to one address with the real host as SNI and
// Host (curl --resolve), and the system resolver's view. The Set ties them together for one run:
// a bound on probes in flight, and a per-address liveness record so that a dead address costs
// one timeout, not one per question.
package probe

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
)

// DefaultParallel bounds the probes in flight across all checks of a run.
const DefaultParallel = 8

// Resolver is the system resolver's view (net.DefaultResolver satisfies it).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config builds a Set. Zero values are the defaults; nil probers are the real ones.
type Config struct {
	// Timeout bounds one probe (one DNS question with its retry, one HTTPS request).
	Timeout time.Duration
	// Parallel bounds the probes in flight; zero means DefaultParallel.
	Parallel int
	// CAFile holds PEM certificates that replace the system roots (--ca-file).
	CAFile string

	DNS      DNS
	HTTPS    HTTPS
	Resolver Resolver
	// Redirect maps the address a check means (a Service's externalIP and port) to the one
	// dialled. Nil dials the address itself; tests map port 53/443 to loopback servers on free
	// ports. Liveness is always keyed on the address meant, so a node is one entry.
	Redirect func(netip.AddrPort) netip.AddrPort
}

// Set is the network toolbox shared by the probe checks of one run.
type Set struct {
	timeout  time.Duration
	dns      DNS
	https    HTTPS
	resolver Resolver
	redirect func(netip.AddrPort) netip.AddrPort
	live     *Liveness
	workers  *workerPool

	// gets is one HTTPS probe per request that every check asking it shares: LA401, LA402 and
	// LA403 ask each address the same thing, and one TLS handshake per address answers all.
	gets sharedCalls[HTTPSRequest, *HTTPSReply]
	// questions is one DNS question per server, name, type and transport: LA303 proves an
	// address with the zone's own name before each forwarded name, and LA301 asks it too.
	questions sharedCalls[dnsQuestion, *DNSReply]
}

// dnsQuestion is one question to one server; proves says whether its outcome decides the
// address's liveness (Query) or not (QueryForwarded).
type dnsQuestion struct {
	server  netip.AddrPort
	name    string
	qtype   uint16
	network string
	proves  bool
}

// NewSet builds the probers of one run. An unreadable or empty CA file is an error that names it.
func NewSet(cfg Config) (*Set, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	s := &Set{
		timeout:  cfg.Timeout,
		dns:      cfg.DNS,
		https:    cfg.HTTPS,
		resolver: cfg.Resolver,
		redirect: cfg.Redirect,
		live:     NewLiveness(),
	}
	par := cfg.Parallel
	if par <= 0 {
		par = DefaultParallel
	}
	s.workers = newWorkerPool(par)
	if s.redirect == nil {
		s.redirect = func(a netip.AddrPort) netip.AddrPort { return a }
	}
	return s, nil
}

// WithDefaults returns cfg with the default timeout and the real probers where cfg names none,
// so that a caller can decorate the probers a Set will use (record and replay wrap them).
func (c Config) WithDefaults() (Config, error) {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DNS == nil {
		c.DNS = &DNSClient{Timeout: c.Timeout, ReuseSockets: true}
	}
	if c.HTTPS == nil {
		roots, err := LoadRoots(c.CAFile)
		if err != nil {
			return c, err
		}
		c.HTTPS = &HTTPSClient{Timeout: c.Timeout, Roots: roots}
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	return c, nil
}

// LoadRoots reads a PEM bundle; an empty path means the system roots (nil).
func LoadRoots(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s: no PEM certificate found", path)
	}
	return pool, nil
}

// Close releases what the probes keep between questions (idle DNS sockets).
func (s *Set) Close() {
	if c, ok := s.dns.(interface{ CloseIdle() }); ok {
		c.CloseIdle()
	}
}

// Timeout is the bound of one probe, for messages ("no answer within 2s").
func (s *Set) Timeout() time.Duration { return s.timeout }

// Query asks one DNS question of server, unless server's address is already known dead. The
// question proves the address (a name the server answers itself): no answer marks it dead.
func (s *Set) Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*DNSReply, error) {
	return s.query(ctx, server, name, qtype, network, true)
}

// QueryForwarded asks a question the server answers through another server (a name outside the
// zone, forwarded): no answer is that upstream's failure, not the address's, so it never marks
// the address dead.
func (s *Set) QueryForwarded(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*DNSReply, error) {
	return s.query(ctx, server, name, qtype, network, false)
}

func (s *Set) query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string, proves bool) (*DNSReply, error) {
	q := dnsQuestion{server: server, name: name, qtype: qtype, network: network, proves: proves}
	r, err := s.questions.do(ctx, q, func() (*DNSReply, error) { return s.ask(ctx, q) })
	if r != nil && r.Msg != nil {
		// Each asker gets its own message: a check may sort or trim what it reads.
		c := *r
		c.Msg = r.Msg.Copy()
		r = &c
	}
	return r, err
}

// ask asks q of its server on a worker, within the address's liveness.
func (s *Set) ask(ctx context.Context, q dnsQuestion) (*DNSReply, error) {
	server, name, qtype, network := q.server, q.name, q.qtype, q.network
	var reply *DNSReply
	do := s.live.Do
	if !q.proves {
		do = s.live.DoUndecided
	}
	err := do(ctx, server, func(ctx context.Context) error {
		return s.workers.run(ctx, func(ctx context.Context) error {
			var err error
			reply, err = s.dns.Query(ctx, s.redirect(server), name, qtype, network)
			if reply != nil {
				reply.Server = server
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// Get makes one pinned HTTPS request, unless req.Addr's address is already known dead. The
// same request asked again in the run (by another check) gets the first one's reply.
func (s *Set) Get(ctx context.Context, req HTTPSRequest) (*HTTPSReply, error) {
	return s.gets.do(ctx, req, func() (*HTTPSReply, error) { return s.get(ctx, req) })
}

func (s *Set) get(ctx context.Context, req HTTPSRequest) (*HTTPSReply, error) {
	var reply *HTTPSReply
	err := s.live.Do(ctx, req.Addr, func(ctx context.Context) error {
		return s.workers.run(ctx, func(ctx context.Context) error {
			dialled := req
			dialled.Addr = s.redirect(req.Addr)
			var err error
			reply, err = s.https.Get(ctx, dialled)
			if reply != nil {
				reply.Addr = req.Addr
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// LookupHost asks the system resolver for host's addresses (IPv4 and IPv6), bounded by the
// probe timeout.
func (s *Set) LookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	addrs, err := s.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("system resolver, %s: %w", host, err)
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.Unmap())
	}
	return SortAddrs(out), nil
}

// Dead returns why addr is not probed any more, or nil.
func (s *Set) Dead(addr netip.AddrPort) *NotProbedError { return s.live.Dead(addr) }

// Validate reports a Config that NewSet would refuse (an unreadable or empty CA file), so the
// command line is checked before anything runs.
func (c Config) Validate() error {
	if c.CAFile == "" {
		return nil
	}
	_, err := LoadRoots(c.CAFile)
	return err
}
