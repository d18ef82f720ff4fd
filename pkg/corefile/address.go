package corefile

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// transportPorts are CoreDNS's default ports per transport (core/dnsserver/register.go
// InspectServerBlocks; plugin/pkg/transport). unix has none.
var transportPorts = map[string]string{
	"dns":    "53",
	"tls":    "853",
	"quic":   "853",
	"grpc":   "443",
	"https":  "443",
	"https3": "443",
	"unix":   "",
}

// transports in the order plugin/pkg/parse Transport tries their prefixes (case-sensitive:
// "DNS://" is not a prefix CoreDNS knows, it stays part of the zone).
var transports = []string{"tls", "dns", "quic", "grpc", "https3", "https", "unix"}

// splitTransport is plugin/pkg/parse Transport: the scheme prefix, dns when there is none.
func splitTransport(s string) (string, string) {
	for _, t := range transports {
		if strings.HasPrefix(s, t+"://") {
			return t, s[len(t)+3:]
		}
	}
	return "dns", s
}

// ParseAddress reads one server block key and returns its first address (a CIDR key off an
// octet boundary gives several reverse zones: parseKey returns them all).
func ParseAddress(key string) (Address, error) {
	addrs, err := parseKey(key)
	if err != nil {
		return Address{Raw: key}, err
	}
	return addrs[0], nil
}

// parseKey normalises one server block key as core/dnsserver/register.go InspectServerBlocks
// does: transport prefix, plugin.SplitHostPort (a trailing :NUMBER is the port, the rest must
// be a domain name of at most 255 characters, a CIDR becomes its reverse zones), the
// transport's default port, the zone lower-cased and fully qualified.
func parseKey(key string) ([]Address, error) {
	trans, rest := splitTransport(key)
	hosts, port, err := splitHostPort(rest)
	for _, h := range hosts {
		if _, _, err := splitHostPort(dns.Fqdn(h)); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if port == "" {
		port = transportPorts[trans]
	}
	var out []Address
	for _, h := range hosts {
		out = append(out, Address{Raw: key, Transport: trans, Zone: canonicalZone(h), Port: port})
	}
	return out, nil
}

// splitHostPort is plugin.SplitHostPort (plugin/normalize.go). A port from an environment
// variable the pod spec does not give ({$PORT}) is kept as written.
func splitHostPort(s string) ([]string, string, error) {
	port := ""
	colon := strings.LastIndex(s, ":")
	if colon == len(s)-1 {
		return nil, "", fmt.Errorf("expecting data after last colon: %q", s)
	}
	if colon != -1 {
		if p, err := strconv.Atoi(s[colon+1:]); err == nil {
			port, s = strconv.Itoa(p), s[:colon]
		} else if isPlaceholder(s[colon+1:]) {
			port, s = s[colon+1:], s[:colon]
		}
	}
	if len(s) > 255 {
		return nil, "", fmt.Errorf("specified zone is too long: %d > 255", len(s))
	}
	if _, ok := dns.IsDomainName(s); !ok {
		return nil, "", fmt.Errorf("zone is not a valid domain name: %s", s)
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil || !strings.Contains(s, "/") {
		return []string{s}, port, nil
	}
	if s[0] == ':' || (s[0] == '0' && strings.Contains(s, ":")) {
		return nil, "", fmt.Errorf("invalid CIDR %s", s)
	}
	return reverseZones(prefix.Masked()), port, nil
}

func isPlaceholder(s string) bool {
	return (strings.HasPrefix(s, "{$") || strings.HasPrefix(s, "{%")) && strings.HasSuffix(s, "}")
}

// canonicalZone returns a server block's or a plugin's zone lower-case and fully qualified, as
// CoreDNS compares zones. It is CoreDNS's reading of any key a Corefile may hold, the root and
// reverse zones included, not a validator: the LAN zone itself is a zone.Zone (pkg/zone).
func canonicalZone(zone string) string {
	return strings.ToLower(dns.Fqdn(strings.TrimSpace(zone)))
}

// reverseZones gives the reverse zones of a network as plugin/pkg/cidr Split and Reverse do: a
// prefix off an octet (IPv4) or nibble (IPv6) boundary is split into the networks of the next
// boundary, each named by its reverse zone.
func reverseZones(p netip.Prefix) []string {
	step := 8
	if p.Addr().Is6() {
		step = 4
	}
	bits := p.Bits()
	target := (bits + step - 1) / step * step
	n := 1 << (target - bits)
	out := make([]string, 0, n)
	a := p.Addr()
	for range n {
		out = append(out, reverseName(a, target, step))
		a = advance(a, a.BitLen()-target)
	}
	return out
}

// reverseName is the reverse zone of the network a/bits (bits on a boundary of step).
func reverseName(a netip.Addr, bits, step int) string {
	var labels []string
	if a.Is4() {
		b := a.As4()
		for i := range bits / 8 {
			labels = append([]string{strconv.Itoa(int(b[i]))}, labels...)
		}
		return strings.Join(append(labels, "in-addr.arpa."), ".")
	}
	b := a.As16()
	const hexdigits = "0123456789abcdef"
	for i := range bits / step {
		nibble := b[i/2] >> 4
		if i%2 == 1 {
			nibble = b[i/2] & 0x0f
		}
		labels = append([]string{string(hexdigits[nibble])}, labels...)
	}
	return strings.Join(append(labels, "ip6.arpa."), ".")
}

// advance adds 1<<shift to a.
func advance(a netip.Addr, shift int) netip.Addr {
	b := a.AsSlice()
	carry := 1 << (shift % 8)
	for i := len(b) - 1 - shift/8; i >= 0 && carry > 0; i-- {
		s := int(b[i]) + carry
		b[i] = byte(s & 0xff)
		carry = s >> 8
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}
