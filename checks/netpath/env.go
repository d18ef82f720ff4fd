// Package netpath holds doctor's DNS and HTTPS path checks (LA301-LA304, LA401-LA403): they ask
// every address a workstation may be given, exactly as a workstation does, and judge the
// answers against the Path model (built from the discovered Setup, or from flags when there is
// no cluster access).
package netpath

import (
	"context"
	"net/netip"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// Env is what the path checks read.
type Env struct {
	Path    Path
	Probes  Prober
	Options Options
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
