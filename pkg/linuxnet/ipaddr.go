package linuxnet

import (
	"net/netip"
	"strconv"
	"strings"
)

// IfAddr is one address of an interface. Peer is set on point-to-point links
// ("inet 10.8.0.1 peer 10.8.0.2/32"), where Prefix is then the local address alone.
type IfAddr struct {
	Prefix netip.Prefix
	Peer   netip.Prefix
}

// Interface is one link with its addresses, in the order `ip` lists them.
type Interface struct {
	Index int
	Name  string
	Addrs []IfAddr
}

// IPv4 returns the interface's IPv4 addresses.
func (i Interface) IPv4() []IfAddr {
	var out []IfAddr
	for _, a := range i.Addrs {
		if a.Prefix.Addr().Is4() {
			out = append(out, a)
		}
	}
	return out
}

// ParseIPAddr reads `ip -o addr show` (iproute2 or busybox): one line per address,
// "IDX: NAME    inet ADDR[/LEN] [peer PEER/LEN] ... ", the rest of the record after a `\`.
// Both print the name as the kernel has it ("%u: %s" in print_addrinfo, ip/ipaddress.c), so
// NAME is taken whole: the kernel allows '@' and '\' in names, and iproute2 6.1 prints a link
// named "@x" as "2: @x    inet ...". Lines it cannot read, and names the kernel could not
// have given (ValidInterfaceName), are skipped.
func ParseIPAddr(out string) []Interface {
	var ifs []Interface
	pos := map[string]int{}
	for line := range strings.SplitSeq(out, "\n") {
		name, idx, addr, ok := parseIPAddrLine(line)
		if !ok {
			continue
		}
		i, seen := pos[name]
		if !seen {
			i = len(ifs)
			pos[name] = i
			ifs = append(ifs, Interface{Index: idx, Name: name})
		}
		ifs[i].Addrs = append(ifs[i].Addrs, addr)
	}
	return ifs
}

// parseIPAddrLine reads one line of `ip -o addr show`. A name holds no white space, so the
// fields before the address are whole words; a `\` only ends the first part of the record.
func parseIPAddrLine(line string) (name string, idx int, addr IfAddr, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasSuffix(f[0], ":") {
		return "", 0, IfAddr{}, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(f[0], ":"), 10, 31)
	if err != nil || n == 0 || !ValidInterfaceName(f[1]) || (f[2] != "inet" && f[2] != "inet6") {
		return "", 0, IfAddr{}, false
	}
	word := func(i int) string { return strings.TrimSuffix(f[i], `\`) }
	a, ok := parsePrefixOrAddr(word(3))
	if !ok {
		return "", 0, IfAddr{}, false
	}
	addr = IfAddr{Prefix: a}
	if len(f) >= 6 && f[4] == "peer" {
		if p, ok := parsePrefixOrAddr(word(5)); ok {
			addr.Peer = p
		}
	}
	return f[1], int(n), addr, true
}

// parsePrefixOrAddr reads "10.8.0.1/24" or a bare "10.8.0.1" (a host prefix).
func parsePrefixOrAddr(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p, true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
