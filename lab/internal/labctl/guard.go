package labctl

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// internetRangeIsFree refuses to start when this machine already uses the lab's "internet"
// range: the workstation gets a route into the lab for it, which would capture the machine's
// own traffic (its resolver, an HTTP proxy, a route or address in that range). Seen here: the
// machine's egress proxy sat in 203.0.113.0/24, and apt broke while the lab was up.
func internetRangeIsFree(l layout.Layout) error {
	prefix, err := netip.ParsePrefix(l.InternetCIDR)
	if err != nil {
		return err
	}
	uses := slices.Concat(resolversIn(prefix), proxiesIn(prefix), addressesIn(prefix))
	if len(uses) > 0 {
		return fmt.Errorf("this machine already uses %s (%s): the lab's internet range would capture it; change InternetCIDR in lab/internal/layout",
			l.InternetCIDR, strings.Join(uses, "; "))
	}
	return nil
}

// resolversIn lists the nameservers of /etc/resolv.conf in prefix.
func resolversIn(prefix netip.Prefix) []string {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var uses []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != "nameserver" {
			continue
		}
		if ip, err := netip.ParseAddr(f[1]); err == nil && prefix.Contains(ip) {
			uses = append(uses, "nameserver "+f[1]+" in /etc/resolv.conf")
		}
	}
	return uses
}

// proxiesIn lists the proxy variables of the environment whose host is an address in prefix.
func proxiesIn(prefix netip.Prefix) []string {
	var uses []string
	for _, env := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "GOPROXY"} {
		for v := range strings.SplitSeq(os.Getenv(env), ",") {
			u, err := url.Parse(strings.TrimSpace(v))
			if err != nil {
				continue
			}
			if ip, err := netip.ParseAddr(u.Hostname()); err == nil && prefix.Contains(ip) {
				uses = append(uses, env+"="+v)
			}
		}
	}
	return uses
}

// addressesIn lists this machine's IPv4 addresses (root namespace) that overlap prefix.
func addressesIn(prefix netip.Prefix) []string {
	out, err := netns.Run(context.Background(), "", "ip", "-4", "-o", "addr", "show")
	if err != nil {
		return nil
	}
	var uses []string
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if p, err := netip.ParsePrefix(f[3]); err == nil && prefix.Overlaps(p) {
			uses = append(uses, "address "+f[3]+" on "+f[1])
		}
	}
	return uses
}

// preflight checks what the lab cannot work without.
func preflight(l layout.Layout) error {
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, iptables): run it with sudo or as root")
	}
	var missing []string
	for _, tool := range []string{"ip", "ss", "iptables", "iptables-restore", "conntrack", "sysctl", "mount", "openvpn", "ping", "curl", "dig"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools: %s (run lab/install-deps.sh)", strings.Join(missing, ", "))
	}
	if err := internetRangeIsFree(l); err != nil {
		return err
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("/dev/net/tun is missing: OpenVPN cannot create its tunnel: %w", err)
	}
	return nil
}
