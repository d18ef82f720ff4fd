package corefile

import (
	"fmt"
	"net"
)

// zoneAddr is core/dnsserver/address.go zoneAddr: one zone served on a port and listen address.
type zoneAddr struct {
	transport, zone, address, port string
}

func (z zoneAddr) String() string {
	s := z.transport + "://" + z.zone + ":" + z.port
	if z.address != "" {
		s += " on " + z.address
	}
	return s
}

// checkServers is what core/dnsserver/register.go MakeServers checks once the plugins are set
// up: every listen address must resolve (groupConfigsByListenAddr), and no zone may be served
// twice on the same transport, port and address (validateZonesAndListeningAddresses): "cannot
// serve dns://apps.example.com.:53 - it is already defined" is what a zone block added beside
// an import that already defines it gets. Blocks with the view plugin may share a zone.
func (c *Corefile) checkServers() {
	if len(c.Problems) > 0 {
		return // CoreDNS stopped earlier
	}
	if c.checkListenAddrs() {
		c.checkOverlaps()
	}
}

// checkListenAddrs: every port and listen address must resolve (groupConfigsByListenAddr).
func (c *Corefile) checkListenAddrs() bool {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		for _, a := range b.Addresses {
			if isPlaceholder(a.Port) || a.Transport == "unix" {
				continue
			}
			for _, h := range listenHosts(b) {
				if h != "" && net.ParseIP(h) == nil {
					continue // an interface name: bind resolves it on the node
				}
				if _, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(h, a.Port)); err != nil {
					c.problem(b.File, b.Line, err.Error())
					return false
				}
			}
		}
	}
	return true
}

// checkOverlaps is validateZonesAndListeningAddresses.
func (c *Corefile) checkOverlaps() {
	registered := map[zoneAddr]zoneAddr{}
	unbound := map[zoneAddr]zoneAddr{}
	for i := range c.Blocks {
		b := &c.Blocks[i]
		filtered := b.Has("view")
		for _, a := range b.Addresses {
			for _, h := range listenHosts(b) {
				z := zoneAddr{transport: a.Transport, zone: a.Zone, address: h, port: a.Port}
				exist, overlap := checkOverlap(registered, unbound, z)
				if !filtered && exist == nil && overlap == nil {
					registered[z] = z
					u := z
					u.address = ""
					unbound[u] = z
				}
				switch {
				case exist != nil && !filtered:
					c.problem(b.File, b.Line, fmt.Sprintf("cannot serve %s - it is already defined", z))
					return
				case overlap != nil:
					c.problem(b.File, b.Line, fmt.Sprintf("cannot serve %s - zone overlap listener capacity with %v", z, *overlap))
					return
				}
			}
		}
	}
}

// checkOverlap is zoneOverlap.check: the same zone:port served twice, or a bound and an
// unbound listener for it.
func checkOverlap(registered, unbound map[zoneAddr]zoneAddr, z zoneAddr) (*zoneAddr, *zoneAddr) {
	if e, ok := registered[z]; ok {
		return &e, nil
	}
	u := z
	u.address = ""
	if already, ok := unbound[u]; ok {
		if z.address == "" {
			return nil, &already
		}
		if _, ok := registered[u]; ok {
			return nil, &u
		}
	}
	return nil, nil
}

// listenHosts are the block's listen addresses: bind's, else "" (every address).
func listenHosts(b *ServerBlock) []string {
	if len(b.Listen) == 0 {
		return []string{""}
	}
	return b.Listen
}

// ServedOn lists the blocks listening on port (dns transport) in Corefile order.
func (c *Corefile) ServedOn(port string) []*ServerBlock {
	var out []*ServerBlock
	for i := range c.Blocks {
		for _, a := range c.Blocks[i].Addresses {
			if a.Transport == "dns" && a.Port == port {
				out = append(out, &c.Blocks[i])
				break
			}
		}
	}
	return out
}

// Ports lists every dns port a block listens on, in block order, without duplicates.
func (c *Corefile) Ports() []string {
	var out []string
	for i := range c.Blocks {
		for _, a := range c.Blocks[i].Addresses {
			if a.Transport == "dns" && !contains(out, a.Port) {
				out = append(out, a.Port)
			}
		}
	}
	return out
}
