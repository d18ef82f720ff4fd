package linuxnet

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"
)

// Route is one IPv4 route of /proc/net/route.
type Route struct {
	Iface   string
	Dest    netip.Prefix
	Gateway netip.Addr // unspecified when the destination is on-link
}

// Default reports whether the route is the default route.
func (r Route) Default() bool { return r.Dest.Bits() == 0 }

// ParseProcRoute reads /proc/net/route. Addresses are 32-bit words printed in the CPU's byte
// order (little-endian on amd64/arm64; bigEndian for s390x). Unreadable lines, and lines
// naming an interface the kernel could not have (ValidInterfaceName), are skipped.
func ParseProcRoute(out string, bigEndian bool) []Route {
	var routes []Route
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] == "Iface" || !ValidInterfaceName(f[0]) {
			continue
		}
		dest, ok1 := hexAddr4(f[1], bigEndian)
		gw, ok2 := hexAddr4(f[2], bigEndian)
		mask, ok3 := hexAddr4(f[7], bigEndian)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		bits := 0
		m := binary.BigEndian.Uint32(mask.AsSlice())
		for m&0x80000000 != 0 {
			bits++
			m <<= 1
		}
		if m != 0 {
			continue // not a contiguous mask
		}
		routes = append(routes, Route{Iface: f[0], Dest: netip.PrefixFrom(dest, bits).Masked(), Gateway: gw})
	}
	return routes
}

func hexAddr4(s string, bigEndian bool) (netip.Addr, bool) {
	if len(s) != 8 {
		return netip.Addr{}, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return netip.Addr{}, false
	}
	var b [4]byte
	if bigEndian {
		binary.BigEndian.PutUint32(b[:], uint32(v))
	} else {
		binary.LittleEndian.PutUint32(b[:], uint32(v))
	}
	return netip.AddrFrom4(b), true
}
