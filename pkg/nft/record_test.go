//go:build record

package nft

// The recorder of this package's testdata: it loads each ruleset into a fresh network
// namespace with the real nft (Debian's nftables), then stores what `nft -j list ruleset` and
// `nft list ruleset` print as testdata/NAME.json and testdata/NAME.txt. It needs root:
//
//	go test -tags record -run TestRecord -v ./pkg/nft/
//
// The namespaces ("vpnrec-nft") are deleted afterwards; no other namespace is touched.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rulesets are nft scripts (nft -f) and the iptables-nft commands run after them.
var rulesets = map[string]struct {
	nft      string
	iptables [][]string
}{
	"masquerade": {nft: `table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr 10.8.0.0/24 oifname "eth0" masquerade
	}
}`},
	"iptables-nft": {iptables: [][]string{{"iptables-nft", "-t", "nat", "-A", "POSTROUTING", "-s", "10.8.0.0/24", "-o", "eth0", "-j", "MASQUERADE"}}},
	"inet-jump-snat": {nft: `table inet vpn {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "eth0" jump vpn_clients
	}
	chain vpn_clients {
		ip saddr 10.8.0.0/24 counter snat ip to 10.244.1.5
	}
}`},
	"sets": {nft: `table ip nat {
	set vpnpool {
		type ipv4_addr
		flags interval
		elements = { 10.8.0.0/24 }
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr @vpnpool masquerade
		ip saddr { 10.9.0.0/24, 10.10.0.7 } masquerade
	}
}`},
	"conditional": {nft: `table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr 10.8.0.0/24 tcp dport 443 masquerade
	}
}`},
	"return-first": {nft: `table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr 10.8.0.0/24 return
		masquerade
	}
}`},
	"negated": {nft: `table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr != 10.244.0.0/16 oifname "eth0" masquerade
	}
}`},
	"other-pool": {nft: `table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr 10.9.0.0/24 masquerade
	}
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip saddr 10.8.0.0/24 tcp dport 8080 dnat to 10.244.1.9:80
	}
}`},
}

func TestRecordRulesets(t *testing.T) {
	for name, rs := range rulesets {
		t.Run(name, func(t *testing.T) {
			ns := "vpnrec-nft"
			_ = exec.Command("ip", "netns", "del", ns).Run()
			require.NoError(t, exec.Command("ip", "netns", "add", ns).Run())
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
			if rs.nft != "" {
				c := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
				c.Stdin = strings.NewReader(rs.nft)
				out, err := c.CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			for _, args := range rs.iptables {
				out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			for ext, args := range map[string][]string{"json": {"nft", "-j", "list", "ruleset"}, "txt": {"nft", "list", "ruleset"}} {
				out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).Output()
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join("testdata", name+"."+ext), out, 0o644))
				t.Logf("%s.%s:\n%s", name, ext, out)
			}
		})
	}
}
