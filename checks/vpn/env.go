// Package vpn holds vpn-trace's checks (VPN001-VPN008): why an OpenVPN pod forwards nothing.
package vpn

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// Env is what vpn-trace's checks read.
type Env struct {
	Client  kubernetes.Interface
	Exec    kube.Executor
	Options Options

	traceOnce sync.Once
	trace     *vpnTrace
}

// Options are vpn-trace's settings, parsed and validated before any check runs (ParseOptions).
type Options struct {
	// Selector picks the VPN pods (nil: pods running an OpenVPN image or container).
	Selector labels.Selector
	// Namespace limits the search ("" = all namespaces).
	Namespace string
	// Public is the last hop of the ladders, host:port ("" = not asked).
	Public string
	// FromClient also walks the ladder from this machine through the tunnel.
	FromClient bool
	// HopTimeout bounds each hop (default 2 s).
	HopTimeout time.Duration
	// ClusterDNS and PodTarget name the ladder's VIP and pod hops when discovery cannot
	// (zero values: discovered). PodTarget's port 0 means "ping it".
	ClusterDNS netip.Addr
	PodTarget  netip.AddrPort
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
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
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
