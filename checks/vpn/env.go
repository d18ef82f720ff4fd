// Package vpn holds vpn-trace's checks (VPN001-VPN008): why an OpenVPN pod forwards nothing.
package vpn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// Env is what vpn-trace's checks read: the API, exec into the VPN pods, the options. Configz
// and Prober replace the node-proxy reader and this machine's prober (nil: the real ones).
type Env struct {
	Client client.Interface
	// Dynamic reads custom resources (Calico's Installation); nil: they are not read.
	Dynamic dynamic.Interface
	Exec    podexec.Executor
	Options Options
	Configz func(ctx context.Context, node string) ([]byte, error)
	Prober  facts.ClientProber

	once     sync.Once
	gatherer *facts.Gatherer
}

// Options are vpn-trace's settings, parsed and validated before any check runs (ParseOptions).
type Options = facts.Options

// gather returns the run's facts that needs names, read once for all checks.
//
// The checks share what they learn through one gatherer: every fact (the pods, a pod's tools,
// its ip_forward, its tunnel...) is read once, by whichever check needs it first, and reused
// by the others. The checks therefore depend on VPN001 only: the runner skips a check whose
// dependency FAILED, and VPN003 (durability) and VPN008 (verdict) must still run when VPN002
// finds forwarding off, which is precisely the interesting case.
func (env *Env) gather(ctx context.Context, needs facts.Need) (*facts.Run, error) {
	env.once.Do(func() {
		env.gatherer = facts.New(facts.Seams{Client: env.Client, Dynamic: env.Dynamic, Exec: env.Exec, Configz: env.Configz, Prober: env.Prober}, env.Options)
	})
	return env.gatherer.Gather(ctx, needs)
}

// Flags are vpn-trace's raw flag values.
type Flags struct {
	Selector, Public, ClusterDNS, PodTarget string
}

// ParseOptions turns the raw flag values into Options; an error names the flag (exit 2).
func ParseOptions(f Flags, o Options) (Options, error) {
	if f.Selector != "" {
		sel, err := labels.Parse(f.Selector)
		if err != nil {
			return o, fmt.Errorf("--selector %q is not a label selector: %v (use the form app=openvpn)", f.Selector, err)
		}
		o.Selector = sel
	}
	if f.ClusterDNS != "" {
		a, err := netip.ParseAddr(f.ClusterDNS)
		if err != nil {
			return o, fmt.Errorf("--cluster-dns %q is not an IP address", f.ClusterDNS)
		}
		o.ClusterDNS = a
	}
	if f.PodTarget != "" {
		a, port, err := parseHostPort(f.PodTarget, 0)
		if err != nil {
			return o, fmt.Errorf("--pod-target: %w", err)
		}
		o.PodTarget = netip.AddrPortFrom(a, port)
	}
	if f.Public != "" {
		pub, err := parsePublic(f.Public)
		if err != nil {
			return o, err
		}
		o.Public = pub
	}
	if o.HopTimeout < 0 {
		return o, fmt.Errorf("--hop-timeout must be positive, got %s", o.HopTimeout)
	}
	return o, nil
}

// parseHostPort reads "10.244.1.7" or "10.244.1.7:8080".
func parseHostPort(s string, defPort uint16) (netip.Addr, uint16, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), ap.Port(), nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("%q is not an IP address or IP:port", s)
	}
	return a, defPort, nil
}

// parsePublic reads --public: an address (port 443 when none is given) or a host name:port.
func parsePublic(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.Trim(s, "[]"), "443"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("--public %q: the port must be a number from 1 to 65535", s)
	}
	if _, err := netip.ParseAddr(host); err != nil && !validHostname(host) {
		return "", fmt.Errorf("--public %q is not an IP address or a host name", s)
	}
	return net.JoinHostPort(host, port), nil
}

func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' {
				return false
			}
		}
	}
	return true
}

// Checks returns vpn-trace's checks in catalogue order.
func Checks(env *Env) []engine.Check {
	return []engine.Check{
		VPNFindPods(env),
		VPNForwarding(env),
		VPNDurability(env),
		VPNTunnel(env),
		VPNReturnPath(env),
		VPNPodLadder(env),
		VPNClientLadder(env),
		VPNVerdict(env),
	}
}

// judged builds check id: gather needs, then judge the facts. A run whose pods cannot be
// listed is an ERROR before any judgement.
func judged(env *Env, id string, needs facts.Need, judge func(*facts.Run) engine.Outcome) engine.Check {
	return catalogue.Check(id, func(ctx context.Context) engine.Outcome {
		run, err := env.gather(ctx, needs)
		if err != nil {
			return engine.Outcome{Err: err}
		}
		return judge(run)
	})
}

// perPod judges each pod. The errors of pods that could not be judged make the check an
// ERROR unless another pod already FAILs it (a failure found is worth more than an unknown).
func perPod(run *facts.Run, judge func(*facts.Pod) ([]engine.Finding, error)) engine.Outcome {
	var fs []engine.Finding
	var errs []error
	for _, p := range run.Pods {
		f, err := judge(p)
		fs = append(fs, f...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: errors.Join(errs...)}
	}
	return engine.Outcome{Findings: fs}
}
