package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// SetLinkMTU sets the MTU of a host's bridge-side veth and returns the previous one. A frame
// larger than it is dropped without an ICMP error: the bridge cannot fragment what it forwards
// to that port, and a veth drops what exceeds its peer's MTU. That is a real link MTU black
// hole on the host's LAN link for packets that carry Don't Fragment.
func (f Lab) SetLinkMTU(ctx context.Context, host string, mtu int) (int, error) {
	for _, h := range f.Layout.Hosts() {
		if h.NS != host {
			continue
		}
		out, err := netns.Run(ctx, "", "cat", "/sys/class/net/"+h.HostVeth+"/mtu")
		if err != nil {
			return 0, err
		}
		prev, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			return 0, fmt.Errorf("the MTU of %s: %w", h.HostVeth, err)
		}
		_, err = netns.Run(ctx, "", "ip", "link", "set", h.HostVeth, "mtu", strconv.Itoa(mtu))
		return prev, err
	}
	return 0, fmt.Errorf("no lab host named %q", host)
}

// nftMasqueradeTable is the pool's masquerade written with nft directly, as an image whose
// entrypoint uses nft rather than iptables writes it.
const nftMasqueradeTable = "lanaccess_vpn_nat"

// MasqueradeWithNft writes the pool's masquerade with nft in the VPN pod (its own table, so
// the iptables rules stay apart).
func (f Lab) MasqueradeWithNft(ctx context.Context) error {
	ns, err := f.VPNPodNS(ctx)
	if err != nil {
		return err
	}
	ruleset := fmt.Sprintf("table ip %s {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tip saddr %s oifname \"eth0\" masquerade\n\t}\n}\n",
		nftMasqueradeTable, f.Layout.VPNPool)
	_, err = netns.RunInput(ctx, ns, ruleset, "nft", "-f", "-")
	return err
}

// DropNftMasquerade removes MasqueradeWithNft's table.
func (f Lab) DropNftMasquerade(ctx context.Context) error {
	ns, err := f.VPNPodNS(ctx)
	if err != nil {
		return err
	}
	_, err = netns.Run(ctx, ns, "nft", "delete", "table", "ip", nftMasqueradeTable)
	return err
}
