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
// "IDX: NAME    inet ADDR[/LEN] [peer PEER/LEN] ... ". Lines it cannot read are skipped.
func ParseIPAddr(out string) []Interface {
	var ifs []Interface
	pos := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.ReplaceAll(line, `\`, " "))
		if len(f) < 4 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(f[1], "@") // "eth0@if7"
		fam := f[2]
		if fam != "inet" && fam != "inet6" {
			continue
		}
		a, ok := parsePrefixOrAddr(f[3])
		if !ok {
			continue
		}
		addr := IfAddr{Prefix: a}
		if len(f) >= 6 && f[4] == "peer" {
			if p, ok := parsePrefixOrAddr(f[5]); ok {
				addr.Peer = p
			}
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
