package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// IPVSDevice is the dummy interface kube-proxy's IPVS proxier binds every Service address to
// (kubernetes pkg/proxy/ipvs/proxier.go: defaultDummyDevice = "kube-ipvs0"). Its addresses
// are the proxier's, not the node's own: kube-proxy itself leaves them out of the node's
// addresses (GetAllLocalAddressesExcept(defaultDummyDevice)), and so does this model.
const IPVSDevice = "kube-ipvs0"

// NodeNet is what a node's own network stack says about its addresses and links, read through
// a node shell (LA201's reader: a trusted system DaemonSet's pod, or our helper pod). It is the
// one model of "the addresses a node owns" the checks use: kube-proxy captures traffic to any
// address of the node, on any interface, not only to its InternalIP, and the LAN reaches the
// node on whichever interface answers ARP for the address.
type NodeNet struct {
	Node string
	// Via says which pod read it, for evidence.
	Via string
	// Links are the node's interfaces with their addresses, in the order `ip` lists them.
	Links []NodeLink
	// Named is false when the addresses came from /proc/net/fib_trie (no `ip` in the reader's
	// image): IPv4 addresses are then known without their interface (Link "").
	Named bool
	// Loose are the IPv4 addresses read without an interface (Named false).
	Loose []netip.Addr
	// IPVSDevicePresent: the node has a kube-ipvs0 interface (from /sys/class/net, so it is
	// known even when the addresses came without names).
	IPVSDevicePresent bool
	// LinksErr is why /sys/class/net could not be read (the addresses stand without it).
	LinksErr error
}

// NodeLink is one interface of a node: its addresses and what sysfs says of the link.
type NodeLink struct {
	Name  string
	Index int
	Addrs []netip.Prefix
	Link  LinkState
}

// LinkState is /sys/class/net/IF/{operstate,speed,duplex} and whether the interface is backed
// by a device (a NIC: /sys/class/net/IF/device exists) or is virtual (veth, bridge, bond...).
//
// The kernel's values (net/core/net-sysfs.c speed_show, duplex_show): speed is the ethtool
// link_ksettings speed in Mb/s, printed "%d", so SPEED_UNKNOWN (-1, include/uapi/linux/ethtool.h)
// reads "-1", which virtio and many VM NICs report; duplex is "half", "full" or "unknown"
// (DUPLEX_UNKNOWN); both fail with EINVAL when the interface is down or its driver has no
// get_link_ksettings (lo, a tunnel). Documentation/ABI/testing/sysfs-class-net: "only valid for
// interfaces that implement the ethtool get_settings method (mostly Ethernet)".
type LinkState struct {
	// Read is false when sysfs was not read for this link.
	Read      bool
	OperState string
	// SpeedRaw and DuplexRaw are the values as read ("" when the read failed).
	SpeedRaw  string
	DuplexRaw string
	Device    bool
}

// Speed returns the negotiated speed in Mb/s, and whether the kernel knows it.
func (l LinkState) Speed() (int, bool) {
	n, err := strconv.Atoi(l.SpeedRaw)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// Duplex returns "full" or "half", and whether the kernel knows it.
func (l LinkState) Duplex() (string, bool) {
	switch l.DuplexRaw {
	case "full", "half":
		return l.DuplexRaw, true
	}
	return "", false
}

// Describe is "1000 Mb/s full duplex", with what is unknown said as such.
func (l LinkState) Describe() string {
	speed := "speed unknown"
	switch n, ok := l.Speed(); {
	case ok:
		speed = fmt.Sprintf("%d Mb/s", n)
	case l.SpeedRaw == "-1":
		speed = "speed unknown (the driver reports -1)"
	case l.SpeedRaw == "":
		speed = "speed not reported (the driver has none, or the link is down)"
	}
	duplex := "duplex unknown"
	if d, ok := l.Duplex(); ok {
		duplex = d + " duplex"
	}
	return speed + ", " + duplex
}

// AddrOwner is a node that carries an address, and on which interface.
type AddrOwner struct {
	Node string
	// Link is the interface ("" when the reader could not name it: fib_trie).
	Link string
}

// Owns returns the interface carrying a on the node, kube-ipvs0 left out (see IPVSDevice).
// ok is false when the node does not have the address.
func (n NodeNet) Owns(a netip.Addr) (link string, ok bool) {
	a = a.Unmap()
	for _, l := range n.Links {
		if l.Name == IPVSDevice {
			continue
		}
		for _, p := range l.Addrs {
			if p.Addr().Unmap() == a {
				return l.Name, true
			}
		}
	}
	if slices.Contains(n.Loose, a) {
		return "", true
	}
	return "", false
}

// IPVSAddrs are the addresses bound to kube-ipvs0 on the node.
func (n NodeNet) IPVSAddrs() []netip.Addr {
	var out []netip.Addr
	for _, l := range n.Links {
		if l.Name != IPVSDevice {
			continue
		}
		for _, p := range l.Addrs {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

// Link returns the interface named name.
func (n NodeNet) Link(name string) (NodeLink, bool) {
	for _, l := range n.Links {
		if l.Name == name {
			return l, true
		}
	}
	return NodeLink{}, false
}

// NodeStatusAddrs are the addresses the API knows for a node: its InternalIPs and ExternalIPs
// (status.addresses, as the kubelet or the cloud provider report them).
func NodeStatusAddrs(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// The markers of NodeAddrCommand's output.
const (
	markAddrs   = "@@lanaccess-ip-addr"
	markNoIP    = "@@lanaccess-no-ip"
	markFibTrie = "@@lanaccess-fib-trie"
	markIfInet6 = "@@lanaccess-if-inet6"
	markLinks   = "@@lanaccess-links"
	markLink    = "@@lanaccess-link "
)

// NodeAddrCommand prints the node's addresses with `ip -o addr show` (iproute2 or busybox),
// or, where the reader's image has no `ip`, /proc/net/fib_trie and /proc/net/if_inet6; then
// the names under /sys/class/net. Read-only, busybox tools only.
func NodeAddrCommand() []string {
	return []string{"sh", "-c", `echo ` + markAddrs + `; ip -o addr show 2>/dev/null || { echo ` + markNoIP +
		`; echo ` + markFibTrie + `; cat /proc/net/fib_trie; echo ` + markIfInet6 + `; cat /proc/net/if_inet6 2>/dev/null; }; echo ` + markLinks + `; ls /sys/class/net`}
}

// LinkStateCommand prints /sys/class/net/IF/{operstate,speed,duplex} and whether IF has a
// device, for each name given (names are passed as arguments, never in the script).
func LinkStateCommand(names []string) []string {
	script := `for n; do echo "` + markLink + `$n"; for f in operstate speed duplex; do v=$(cat "/sys/class/net/$n/$f" 2>/dev/null); echo "$f=$v"; done; ` +
		`if [ -e "/sys/class/net/$n/device" ]; then echo device=yes; else echo device=no; fi; done`
	return append([]string{"sh", "-c", script, "sh"}, names...)
}

// ParseNodeAddrs reads NodeAddrCommand's output into n (Links, Loose, Named,
// IPVSDevicePresent). Output without its markers is an error: whatever ran was not the command.
func ParseNodeAddrs(out string, n *NodeNet) error {
	sections := map[string]*strings.Builder{}
	var cur *strings.Builder
	for line := range strings.SplitSeq(out, "\n") {
		switch strings.TrimSpace(line) {
		case markAddrs, markNoIP, markFibTrie, markIfInet6, markLinks:
			cur = &strings.Builder{}
			sections[strings.TrimSpace(line)] = cur
			continue
		}
		if cur != nil {
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	addrs, links := sections[markAddrs], sections[markLinks]
	if addrs == nil || links == nil {
		return fmt.Errorf("the node's addresses were not in the output (the command did not run as expected)")
	}
	for name := range strings.FieldsSeq(links.String()) {
		if name == IPVSDevice {
			n.IPVSDevicePresent = true
		}
	}
	if _, noIP := sections[markNoIP]; !noIP {
		n.Named = true
		for _, i := range linuxnet.ParseIPAddr(addrs.String()) {
			l := NodeLink{Name: i.Name, Index: i.Index}
			for _, a := range i.Addrs {
				l.Addrs = append(l.Addrs, a.Prefix)
			}
			n.Links = append(n.Links, l)
		}
		return nil
	}
	if fib := sections[markFibTrie]; fib != nil {
		n.Loose = ParseFibTrieLocal(fib.String())
	}
	if v6 := sections[markIfInet6]; v6 != nil {
		n.Links = append(n.Links, parseIfInet6(v6.String())...)
	}
	if len(n.Loose) == 0 && len(n.Links) == 0 {
		return fmt.Errorf("no address could be read: no `ip` in the reader's image, and /proc/net/fib_trie gave none")
	}
	return nil
}

// ParseFibTrieLocal returns the node's IPv4 addresses from /proc/net/fib_trie: each leaf
// "|-- A.B.C.D" followed by a "/32 host LOCAL" alias is an address of the node (the kernel's
// local table, net/ipv4/fib_trie.c fib_trie_seq_show). Duplicates (the file lists the main
// and the local table) are dropped.
func ParseFibTrieLocal(s string) []netip.Addr {
	var out []netip.Addr
	var leaf netip.Addr
	for line := range strings.SplitSeq(s, "\n") {
		t := strings.TrimSpace(line)
		t = strings.TrimLeft(t, "|+-` ")
		if a, err := netip.ParseAddr(strings.TrimSpace(t)); err == nil && a.Is4() {
			leaf = a
			continue
		}
		if strings.HasPrefix(t, "/32 host LOCAL") && leaf.IsValid() && !slices.Contains(out, leaf) {
			out = append(out, leaf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// parseIfInet6 reads /proc/net/if_inet6: "ADDR(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME".
func parseIfInet6(s string) []NodeLink {
	var out []NodeLink
	pos := map[string]int{}
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || len(f[0]) != 32 || !linuxnet.ValidInterfaceName(f[5]) {
			continue
		}
		var raw [16]byte
		ok := true
		for i := range 16 {
			b, err := strconv.ParseUint(f[0][2*i:2*i+2], 16, 8)
			ok = ok && err == nil
			raw[i] = byte(b)
		}
		idx, err1 := strconv.ParseUint(f[1], 16, 31)
		bits, err2 := strconv.ParseUint(f[2], 16, 8)
		if !ok || err1 != nil || err2 != nil || bits > 128 {
			continue
		}
		p := netip.PrefixFrom(netip.AddrFrom16(raw), int(bits))
		i, seen := pos[f[5]]
		if !seen {
			i = len(out)
			pos[f[5]] = i
			out = append(out, NodeLink{Name: f[5], Index: int(idx)})
		}
		out[i].Addrs = append(out[i].Addrs, p)
	}
	return out
}

// ParseLinkStates reads LinkStateCommand's output into the links of n it names.
func ParseLinkStates(out string, n *NodeNet) {
	var cur *LinkState
	for line := range strings.SplitSeq(out, "\n") {
		if name, ok := strings.CutPrefix(line, markLink); ok {
			cur = nil
			for i := range n.Links {
				if n.Links[i].Name == name {
					cur = &n.Links[i].Link
					cur.Read = true
				}
			}
			continue
		}
		if cur == nil {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) > 32 {
			v = v[:32] // sysfs values are short; anything longer is not one
		}
		switch k {
		case "operstate":
			cur.OperState = v
		case "speed":
			cur.SpeedRaw = v
		case "duplex":
			cur.DuplexRaw = v
		case "device":
			cur.Device = v == "yes"
		}
	}
}

// CarryingLinks are the names of the links that hold a global unicast address (not loopback,
// not link-local, not kube-ipvs0): the node's links to a network.
func (n NodeNet) CarryingLinks() []string {
	var out []string
	for _, l := range n.Links {
		if l.Name == IPVSDevice {
			continue
		}
		for _, p := range l.Addrs {
			if a := p.Addr(); a.IsGlobalUnicast() && !slices.Contains(out, l.Name) {
				out = append(out, l.Name)
			}
		}
	}
	return out
}
