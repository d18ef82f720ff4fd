package noderead

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

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

// The markers tests look for in the node commands.
const (
	markAddrs = linuxnet.MarkAddrs
	markLink  = linuxnet.MarkLink
)

// ParseNodeAddrs reads linuxnet.NodeAddrCommand's output into n (Links, Loose, Named,
// IPVSDevicePresent); the parsing is linuxnet's (outside data, fuzzed there).
func ParseNodeAddrs(out string, n *NodeNet) error {
	o, err := linuxnet.ParseNodeAddrOutput(out)
	if err != nil {
		return err
	}
	n.Named, n.Loose = o.Named, o.Loose
	n.IPVSDevicePresent = slices.Contains(o.Links, IPVSDevice)
	for _, i := range o.Interfaces {
		l := NodeLink{Name: i.Name, Index: i.Index}
		for _, a := range i.Addrs {
			l.Addrs = append(l.Addrs, a.Prefix)
		}
		n.Links = append(n.Links, l)
	}
	return nil
}

// ParseLinkStates reads linuxnet.LinkStateCommand's output into the links of n it names.
func ParseLinkStates(out string, n *NodeNet) {
	read := linuxnet.ParseSysfsLinks(out)
	for i := range n.Links {
		l, ok := read[n.Links[i].Name]
		if !ok {
			continue
		}
		n.Links[i].Link = LinkState{Read: true, OperState: l.OperState, SpeedRaw: l.Speed, DuplexRaw: l.Duplex, Device: l.Device}
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
