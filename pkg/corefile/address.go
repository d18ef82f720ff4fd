package corefile

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// transportPorts are CoreDNS's default ports per transport (core/dnsserver/register.go).
var transportPorts = map[string]string{
	"dns":    "53",
	"tls":    "853",
	"quic":   "853",
	"grpc":   "443",
	"https":  "443",
	"https3": "443",
	"unix":   "",
}

// ParseAddress normalises one server block key as CoreDNS does: optional transport prefix,
// zone, optional port (a trailing :NUMBER), CIDR keys turned into reverse zones.
func ParseAddress(key string) (Address, error) {
	a := Address{Raw: key, Transport: "dns"}
	rest := key
	if i := strings.Index(key, "://"); i >= 0 {
		a.Transport, rest = strings.ToLower(key[:i]), key[i+3:]
		if _, ok := transportPorts[a.Transport]; !ok {
			return a, fmt.Errorf("server block key %q: unknown transport %q", key, a.Transport)
		}
	}
	host := rest
	if colon := strings.LastIndex(rest, ":"); colon >= 0 {
		if colon == len(rest)-1 {
			return a, fmt.Errorf("server block key %q: expecting a port after the last colon", key)
		}
		port := rest[colon+1:]
		if isPlaceholder(port) {
			// {$PORT} is set in the pod's environment; keep it as written.
			a.Port, host = port, rest[:colon]
		} else if p, err := strconv.Atoi(port); err == nil {
			if p < 1 || p > 65535 {
				return a, fmt.Errorf("server block key %q: port %d out of range", key, p)
			}
			a.Port, host = strconv.Itoa(p), rest[:colon]
		}
	}
	if a.Port == "" {
		a.Port = transportPorts[a.Transport]
	}
	if len(host) > 255 {
		return a, fmt.Errorf("server block key %q: zone longer than 255 characters", key)
	}
	if _, ok := dns.IsDomainName(host); !ok || host == "" {
		return a, fmt.Errorf("server block key %q: zone %q is not a valid domain name", key, host)
	}
	if _, n, err := net.ParseCIDR(host); err == nil {
		a.Zone = reverseZone(n)
		return a, nil
	}
	a.Zone = NormalizeZone(host)
	return a, nil
}

func isPlaceholder(s string) bool {
	return (strings.HasPrefix(s, "{$") || strings.HasPrefix(s, "{%")) && strings.HasSuffix(s, "}")
}

// NormalizeZone returns zone lower-case and fully qualified, as CoreDNS compares zones.
func NormalizeZone(zone string) string {
	return strings.ToLower(dns.Fqdn(strings.TrimSpace(zone)))
}

// reverseZone gives the in-addr.arpa/ip6.arpa zone of a network. CoreDNS splits prefixes
// that are not on an octet (nibble) boundary into several zones; here the enclosing
// boundary is enough to name the block.
func reverseZone(n *net.IPNet) string {
	ones, bits := n.Mask.Size()
	if ip4 := n.IP.To4(); ip4 != nil && bits == 32 {
		labels := []string{}
		for i := 0; i < ones/8; i++ {
			labels = append([]string{strconv.Itoa(int(ip4[i]))}, labels...)
		}
		return strings.Join(append(labels, "in-addr.arpa."), ".")
	}
	ip6 := n.IP.To16()
	const hexdigits = "0123456789abcdef"
	labels := []string{}
	for i := 0; i < ones/4 && i < 32; i++ {
		b := ip6[i/2]
		nibble := b >> 4
		if i%2 == 1 {
			nibble = b & 0x0f
		}
		labels = append([]string{string(hexdigits[nibble])}, labels...)
	}
	return strings.Join(append(labels, "ip6.arpa."), ".")
}
