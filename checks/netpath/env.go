// Package netpath holds doctor's DNS and HTTPS path checks (LA301-LA304, LA401-LA403): they ask
// every address a workstation may be given, exactly as a workstation does, and judge the
// answers against the Path model (built from the discovered Setup, or from flags when there is
// no cluster access).
package netpath

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// Env is what the path checks read.
type Env struct {
	Path    Path
	Probes  Prober
	Options Options

	systemOnce sync.Once
	system     *systemLookup
}

// systemLookup is the system resolver's answer for the probe host, asked once per run.
type systemLookup struct {
	done  chan struct{}
	addrs []netip.Addr
	err   error
}

// beginSystemLookup asks this machine's resolver for the probe host in the background, once
// per run, then sends the system path's HTTPS request (the probe set shares its answer with
// LA402): a resolver silent for the name, or a system path that does not answer (the lab's
// public address), costs one probe timeout that runs beside the other probes instead of
// after them (LA402's Begin).
func (env *Env) beginSystemLookup(ctx context.Context) *systemLookup {
	env.systemOnce.Do(func() {
		l := &systemLookup{done: make(chan struct{})}
		env.system = l
		if env.Probes == nil || env.Path.Host.Name == "" {
			close(l.done)
			return
		}
		go func() {
			l.addrs, l.err = env.Probes.LookupHost(ctx, env.Path.Host.Name)
			close(l.done)
			if req, ok := systemPathRequest(&env.Path, env.Path.HTTPS, l.addrs); l.err == nil && ok {
				_, _ = env.Probes.Get(ctx, req) // the answer is LA402's, through the probe set
			}
		}()
	})
	return env.system
}

// systemAddrs waits for the lookup begun by beginSystemLookup (beginning it when nothing did).
func (env *Env) systemAddrs(ctx context.Context) ([]netip.Addr, error) {
	l := env.beginSystemLookup(ctx)
	select {
	case <-l.done:
		return l.addrs, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Options are the user's settings the path checks read, parsed before any check runs.
type Options struct {
	// OutsideName must resolve through the '.' block (LA303).
	OutsideName string
	// ExpectStatus and ExpectLocation are what LA401 expects of the probe host.
	ExpectStatus   int
	ExpectLocation LocationRule
	// Insecure accepts an untrusted certificate (still reported).
	Insecure bool
}

// Prober asks the network: DNS questions, pinned HTTPS requests and the system resolver. One
// probe.Set per run, so that a dead address costs one timeout across all checks.
type Prober interface {
	Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error)
	// QueryForwarded asks a name the server answers through its upstream: its silence is the
	// upstream's, never a reason to write the address off.
	QueryForwarded(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error)
	Get(ctx context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error)
	LookupHost(ctx context.Context, host string) ([]netip.Addr, error)
	Timeout() time.Duration
}

// Checks returns the path checks in catalogue order.
func Checks(env *Env) []engine.Check {
	return []engine.Check{
		DNSAnswers(env),
		AAAANoData(env),
		Forwarding(env),
		NoClusterLeak(env),
		HTTPSAnswer(env),
		SamePathAnswer(env),
		LinkQuality(env),
	}
}
