package linuxnet

import (
	"net/netip"
	"strings"
)

// OpenVPNConfig is what an OpenVPN server's configuration (file or command line) says about
// addressing and what it pushes to clients.
type OpenVPNConfig struct {
	// Server is `server NET MASK`; PoolRange the smallest prefix holding `ifconfig-pool`;
	// SubnetIfconfig `ifconfig ADDR MASK` in topology subnet. See ClientPool.
	Server, PoolRange, SubnetIfconfig netip.Prefix
	// Local and Remote come from `ifconfig` (Remote is the peer in p2p/net30 topology).
	Local, Remote netip.Addr
	Topology      string
	Dev           string
	Port          string
	Proto         string
	// ConfigFiles are the files named by --config or as the single positional argument.
	ConfigFiles []string
	// StatusFile lists connected clients when the server writes one (`status FILE`).
	StatusFile string
	PushDNS    []netip.Addr
	PushDomain []string
	PushRoutes []netip.Prefix
	// Routes are server-side `route` directives (client subnets behind the tunnel).
	Routes []netip.Prefix
}

// ParseOpenVPNConfig reads a configuration file's text and merges it into c.
func (c *OpenVPNConfig) ParseOpenVPNConfig(text string) {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		c.directive(splitArgs(line))
	}
}

// ParseOpenVPNArgs reads an openvpn command line ("openvpn --dev tun0 --ifconfig a b ..." or
// "openvpn server.conf") and merges it into c.
func (c *OpenVPNConfig) ParseOpenVPNArgs(args []string) {
	if len(args) > 0 && strings.HasSuffix(args[0], "openvpn") {
		args = args[1:]
	}
	if len(args) == 1 && !strings.HasPrefix(args[0], "--") {
		c.ConfigFiles = append(c.ConfigFiles, args[0])
		return
	}
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			c.directive(cur)
		}
		cur = nil
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			flush()
			cur = []string{strings.TrimPrefix(a, "--")}
			continue
		}
		cur = append(cur, a)
	}
	flush()
}

func (c *OpenVPNConfig) directive(f []string) {
	if len(f) == 0 {
		return
	}
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	switch f[0] {
	case "config":
		if arg(1) != "" {
			c.ConfigFiles = append(c.ConfigFiles, arg(1))
		}
	case "server":
		if p, ok := netMask(arg(1), arg(2)); ok {
			c.Server = p
		}
	case "ifconfig":
		l, err1 := netip.ParseAddr(arg(1))
		r, err2 := netip.ParseAddr(arg(2))
		if err1 != nil || err2 != nil {
			return
		}
		c.Local = l
		if p, ok := netMask(arg(1), arg(2)); ok && strings.HasPrefix(arg(2), "255.") {
			c.SubnetIfconfig = p // topology subnet: the second argument is a netmask
			return
		}
		c.Remote = r
	case "ifconfig-pool":
		start, err1 := netip.ParseAddr(arg(1))
		end, err2 := netip.ParseAddr(arg(2))
		if err1 != nil || err2 != nil {
			return
		}
		if p, ok := netMask(arg(1), arg(3)); ok {
			c.PoolRange = p
		} else {
			c.PoolRange = coveringPrefix(start, end)
		}
	case "topology":
		c.Topology = arg(1)
	case "dev":
		c.Dev = arg(1)
	case "port", "lport":
		c.Port = arg(1)
	case "proto":
		c.Proto = arg(1)
	case "status":
		c.StatusFile = arg(1)
	case "route":
		if p, ok := netMask(arg(1), arg(2)); ok {
			c.Routes = append(c.Routes, p)
		}
	case "push":
		c.push(splitArgs(arg(1)))
	}
}

func (c *OpenVPNConfig) push(f []string) {
	if len(f) == 0 {
		return
	}
	switch {
	case f[0] == "route" && len(f) >= 2:
		mask := "255.255.255.255"
		if len(f) >= 3 {
			mask = f[2]
		}
		if p, ok := netMask(f[1], mask); ok {
			c.PushRoutes = append(c.PushRoutes, p)
		}
	case f[0] == "dhcp-option" && len(f) >= 3 && strings.EqualFold(f[1], "DNS"):
		if a, err := netip.ParseAddr(f[2]); err == nil {
			c.PushDNS = append(c.PushDNS, a)
		}
	case f[0] == "dhcp-option" && len(f) >= 3 && (strings.EqualFold(f[1], "DOMAIN") || strings.EqualFold(f[1], "DOMAIN-SEARCH")):
		c.PushDomain = append(c.PushDomain, f[2])
	}
}

// ClientPool is the clients' address range: `server`, else `ifconfig-pool`, else the
// subnet of `ifconfig`, else the p2p peer alone. Invalid when the configuration says none.
func (c OpenVPNConfig) ClientPool() netip.Prefix {
	for _, p := range []netip.Prefix{c.Server, c.PoolRange, c.SubnetIfconfig} {
		if p.IsValid() {
			return p
		}
	}
	if c.Remote.IsValid() {
		return netip.PrefixFrom(c.Remote, c.Remote.BitLen())
	}
	return netip.Prefix{}
}

// coveringPrefix is the smallest prefix that holds both addresses.
func coveringPrefix(a, b netip.Addr) netip.Prefix {
	if a.BitLen() != b.BitLen() {
		return netip.Prefix{}
	}
	for bits := a.BitLen(); bits >= 0; bits-- {
		p := netip.PrefixFrom(a, bits).Masked()
		if p.Contains(b) {
			return p
		}
	}
	return netip.Prefix{}
}

// netMask reads "10.8.0.0 255.255.255.0" as 10.8.0.0/24.
func netMask(addr, mask string) (netip.Prefix, bool) {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, false
	}
	m, err := netip.ParseAddr(mask)
	if err != nil || !m.Is4() {
		return netip.Prefix{}, false
	}
	b := m.As4()
	bits, done := 0, false
	for _, x := range b {
		for i := 7; i >= 0; i-- {
			set := x&(1<<i) != 0
			switch {
			case set && done:
				return netip.Prefix{}, false
			case set:
				bits++
			default:
				done = true
			}
		}
	}
	return netip.PrefixFrom(a, bits).Masked(), true
}
