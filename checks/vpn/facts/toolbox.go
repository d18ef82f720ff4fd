package facts

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// vpnTools are the programs the trace can use inside a VPN pod, by purpose: reading
// (cat, sysctl, ip), NAT rules (iptables-save variants, nft), DNS (getent, nslookup, dig, host),
// reachability (ping, nc, bash's /dev/tcp and /dev/udp) and bounding (timeout).
var vpnTools = []string{"cat", "sysctl", "ip", "tr", "iptables-save", "iptables-legacy-save", "iptables-nft-save", "nft",
	"getent", "nslookup", "dig", "host", "ping", "nc", "bash", "timeout", "dd", "wc"}

// toolbox is the set of vpnTools the image has.
type toolbox map[string]bool

func (tb toolbox) String() string {
	var have []string
	for t, ok := range tb {
		if ok {
			have = append(have, t)
		}
	}
	sort.Strings(have)
	return strings.Join(have, " ")
}

func toolsCommand() []string {
	return []string{"sh", "-c", `for t in ` + strings.Join(vpnTools, " ") + `; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; echo @@end`}
}

// podTools asks the pod once which programs it has (one exec instead of one per attempt).
func (g *Gatherer) podTools(ctx context.Context, m *podMemos) (toolbox, error) {
	return m.tools.get(ctx, func(ctx context.Context) (toolbox, error) {
		out, _, err := g.exec(ctx, m, toolsCommand(), g.execTimeout())
		if err != nil {
			return nil, fmt.Errorf("listing the tools of %s: %w", m.object(), err)
		}
		if !strings.Contains(out, "@@end") {
			return nil, fmt.Errorf("listing the tools of %s: the output was cut", m.object())
		}
		tb := toolbox{}
		for line := range strings.SplitSeq(out, "\n") {
			if line = strings.TrimSpace(line); line != "" && line != "@@end" {
				tb[line] = true
			}
		}
		return tb, nil
	})
}
