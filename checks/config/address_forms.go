package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// addrForm is one address as written and what it means.
type addrForm struct {
	Raw  string
	Addr netip.Addr // valid when the text names an address, even non-canonically
	// Problem is "" for a canonical address; otherwise why the text is not one.
	Problem   string
	Canonical bool
}

// readAddr judges one address as written in a Service or a zone answer. Kubernetes accepts
// legacy forms (leading zeros, IPv4-mapped IPv6) for externalIPs and warns about them; other
// tools read them differently (leading zeros are octal for inet_aton), so they are named.
func readAddr(raw string) addrForm {
	f := addrForm{Raw: raw}
	a, err := netip.ParseAddr(raw)
	switch {
	case err == nil && a.Is4In6():
		f.Addr = a.Unmap()
		f.Problem = fmt.Sprintf("IPv4-mapped IPv6 form: write %s", f.Addr)
	case err == nil && a.String() != raw:
		f.Addr = a
		f.Problem = fmt.Sprintf("not in canonical form: write %s", a)
	case err == nil:
		f.Addr, f.Canonical = a, true
	default:
		if sloppy, ok := parseLeadingZeros(raw); ok {
			f.Addr = sloppy
			f.Problem = fmt.Sprintf("leading zeros: write %s", sloppy)
		} else {
			f.Problem = "not an IP address"
		}
	}
	if f.Addr.IsValid() && f.Problem == "" {
		switch {
		case f.Addr.IsUnspecified(), f.Addr.IsLoopback(), f.Addr.IsMulticast(), f.Addr.IsLinkLocalUnicast():
			f.Problem = "not a unicast address a node can carry"
			f.Canonical = false
		}
	}
	return f
}

// parseLeadingZeros reads a dotted IPv4 address whose octets have leading zeros in decimal,
// as Kubernetes' legacy parser does.
func parseLeadingZeros(raw string) (netip.Addr, bool) {
	parts := strings.Split(raw, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	for i, p := range parts {
		t := strings.TrimLeft(p, "0")
		if t == "" && p != "" {
			t = "0"
		}
		parts[i] = t
	}
	a, err := netip.ParseAddr(strings.Join(parts, "."))
	return a, err == nil && a.Is4()
}
