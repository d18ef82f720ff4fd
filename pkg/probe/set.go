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
	"sync"
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

	mu   sync.Mutex
	gets map[HTTPSRequest]*httpsCall
}

// httpsCall is one HTTPS probe that every check asking the same request shares: LA401, LA402
// and LA403 ask each address the same thing, and one TLS handshake per address answers all.
type httpsCall struct {
	done      chan struct{}
	reply     *HTTPSReply
	err       error
	cancelled bool // the asker's context ended: not an answer for the others
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
	var reply *DNSReply
	do := s.live.Do
	if !proves {
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
	for {
		s.mu.Lock()
		if s.gets == nil {
			s.gets = map[HTTPSRequest]*httpsCall{}
		}
		c, shared := s.gets[req]
		if !shared {
			c = &httpsCall{done: make(chan struct{})}
			s.gets[req] = c
		}
		s.mu.Unlock()
		if !shared {
			c.reply, c.err = s.get(ctx, req)
			if ctx.Err() != nil {
				c.cancelled = true
				s.mu.Lock()
				delete(s.gets, req)
				s.mu.Unlock()
			}
			close(c.done)
			return c.reply, c.err
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !c.cancelled {
			return c.reply, c.err
		}
	}
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
