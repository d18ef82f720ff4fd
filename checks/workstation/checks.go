package workstation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// Env is what the client-check catalogue reads. Every seam is injected.
type Env struct {
	Target ws.Target
	// OS is the system the checks run on (the remediations are this OS's commands).
	OS ws.OS
	// ProbeName is a name in the zone (a random label avoids every cache on the way).
	ProbeName string
	// OutsideName is a name outside the zone that must keep resolving.
	OutsideName string
	// DNSPort is the port of the zone's servers (53).
	DNSPort uint16
	// Timeout bounds each lookup, query and command.
	Timeout time.Duration
	// Connection is the NetworkManager profile named by the user, for remediations (Linux).
	Connection string

	Resolver ws.Resolver
	DNS      probe.DNS
	Commands ws.CommandRunner
	ReadFile func(path string) ([]byte, error)
}

// maxServers bounds the direct queries of WS003: one per server, all at once.
const maxServers = 16

// Checks returns the client-check catalogue in order:
//
//	WS001 a name in the zone resolves to the node addresses through the system resolver
//	WS002 a name outside the zone still resolves
//	WS003 each of the zone's servers answers from this machine
//	WS004 Linux: systemd-resolved's current server of the link is one of the zone's servers
//
// They do not depend on each other in the engine's sense: WS004 and WS003 matter most when
// WS001 fails, so none of them is skipped because another failed.
func Checks(env Env) []engine.Check {
	s := &session{env: env}
	return []engine.Check{
		zoneResolves(s),
		outsideStillResolves(s),
		serversAnswer(s),
		currentServer(s),
	}
}

// session is one run of the catalogue: the zone lookup is done once and shared, so that WS001
// and WS004 judge the same answer (and WS004 reads systemd-resolved's state after a query went
// through it).
type session struct {
	env  Env
	once sync.Once
	zone lookupResult
}

type lookupResult struct {
	name  string
	addrs []netip.Addr
	err   error
	took  time.Duration
}

// resolvedCorrectly: the zone lookup gave exactly the expected answers.
func (r lookupResult) resolvedCorrectly(want []netip.Addr) bool {
	return r.err == nil && probe.SameAddrs(r.addrs, want)
}

func (s *session) zoneLookup(ctx context.Context) lookupResult {
	s.once.Do(func() { s.zone = s.lookup(ctx, s.env.ProbeName) })
	return s.zone
}

func (s *session) lookup(ctx context.Context, name string) lookupResult {
	ctx, cancel := context.WithTimeout(ctx, s.env.timeout())
	defer cancel()
	start := time.Now()
	addrs, err := s.env.Resolver.LookupNetIP(ctx, "ip", name)
	for i, a := range addrs {
		addrs[i] = a.Unmap().WithZone("")
	}
	return lookupResult{name: name, addrs: probe.SortAddrs(addrs), err: err, took: time.Since(start)}
}

// timeout bounds one lookup, query or command.
func (env Env) timeout() time.Duration {
	if env.Timeout > 0 {
		return env.Timeout
	}
	return probe.DefaultTimeout
}

// lookupFailure describes a failed system lookup in words, and whether it was cut short by the
// run being interrupted (then the check cannot say anything: ERROR).
func lookupFailure(ctx context.Context, r lookupResult) (msg string, interrupted bool) {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", true
	}
	var dnsErr *net.DNSError
	switch {
	case errors.As(r.err, &dnsErr) && dnsErr.IsNotFound:
		return r.name + " does not exist for this machine's resolver (NXDOMAIN or no address)", false
	case errors.As(r.err, &dnsErr) && dnsErr.IsTimeout, errors.Is(r.err, context.DeadlineExceeded):
		return fmt.Sprintf("this machine's resolver gave no answer for %s within %s", r.name, r.took.Round(time.Millisecond)), false
	}
	return fmt.Sprintf("this machine's resolver failed for %s: %v", r.name, r.err), false
}
