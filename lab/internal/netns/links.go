package netns

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
)

// AddBridge creates a bridge in the root namespace with an address, up.
func AddBridge(ctx context.Context, name, cidr string) error {
	for _, argv := range [][]string{
		{"ip", "link", "add", name, "type", "bridge"},
		{"ip", "addr", "add", cidr, "dev", name},
		{"ip", "link", "set", name, "up"},
	} {
		if _, err := Run(ctx, "", argv...); err != nil {
			return err
		}
	}
	return nil
}

// LinkExists reports whether a link exists in ns.
func LinkExists(ctx context.Context, ns, name string) bool {
	_, err := Run(ctx, ns, "ip", "link", "show", name)
	return err == nil
}

// DeleteLink removes a link from ns; a missing link is not an error.
func DeleteLink(ctx context.Context, ns, name string) error {
	if !LinkExists(ctx, ns, name) {
		return nil
	}
	_, err := Run(ctx, ns, "ip", "link", "delete", name)
	if err != nil && !LinkExists(ctx, ns, name) {
		// Deleting a namespace removes its veth peers asynchronously: gone is gone.
		return nil
	}
	return err
}

// ConnectToBridge creates a veth pair: hostEnd in the root namespace enslaved to bridge, and
// eth0 inside ns with cidr, both up.
func ConnectToBridge(ctx context.Context, bridge, hostEnd, ns, cidr string) error {
	steps := []struct {
		ns   string
		argv []string
	}{
		{"", []string{"ip", "link", "add", hostEnd, "type", "veth", "peer", "name", "eth0", "netns", ns}},
		{"", []string{"ip", "link", "set", hostEnd, "master", bridge, "up"}},
		{ns, []string{"ip", "addr", "add", cidr, "dev", "eth0"}},
		{ns, []string{"ip", "link", "set", "eth0", "up"}},
	}
	for _, s := range steps {
		if _, err := Run(ctx, s.ns, s.argv...); err != nil {
			return err
		}
	}
	return nil
}

// AddLocalBridge creates an up, port-less bridge in ns that holds local addresses (pod IPs,
// "public" addresses), like a CNI bridge. A bridge rather than a dummy device: the kernel the
// lab runs on may lack the dummy driver (`ip link add type dummy`: "Unknown device type").
func AddLocalBridge(ctx context.Context, ns, name string) error {
	if _, err := Run(ctx, ns, "ip", "link", "add", name, "type", "bridge"); err != nil {
		return err
	}
	_, err := Run(ctx, ns, "ip", "link", "set", name, "up")
	return err
}

// SetLink sets a link up or down.
func SetLink(ctx context.Context, ns, name string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := Run(ctx, ns, "ip", "link", "set", name, state)
	return err
}

// AddAddr adds an address (CIDR form) to dev; an existing one is not an error.
func AddAddr(ctx context.Context, ns, dev, cidr string) error {
	_, err := Run(ctx, ns, "ip", "addr", "replace", cidr, "dev", dev)
	return err
}

// DelAddr removes an address from dev.
func DelAddr(ctx context.Context, ns, dev, cidr string) error {
	_, err := Run(ctx, ns, "ip", "addr", "del", cidr, "dev", dev)
	return err
}

// Addrs lists the IPv4 addresses on dev.
func Addrs(ctx context.Context, ns, dev string) ([]netip.Addr, error) {
	out, err := Run(ctx, ns, "ip", "-j", "-4", "addr", "show", "dev", dev)
	if err != nil {
		return nil, err
	}
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("ip -j addr in %s: %w", ns, err)
	}
	var addrs []netip.Addr
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil {
				addrs = append(addrs, ip)
			}
		}
	}
	return addrs, nil
}

// ReplaceRoute installs (or updates) a route to dst via gateway in ns.
func ReplaceRoute(ctx context.Context, ns, dst, via string) error {
	_, err := Run(ctx, ns, "ip", "route", "replace", dst, "via", via)
	return err
}

// DelRoute removes a route; a missing route is not an error.
func DelRoute(ctx context.Context, ns, dst string) error {
	out, err := Run(ctx, ns, "ip", "route", "show", dst)
	if err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	_, err = Run(ctx, ns, "ip", "route", "del", dst)
	return err
}

// HasRoute reports whether ns has a route for exactly dst.
func HasRoute(ctx context.Context, ns, dst string) (bool, error) {
	out, err := Run(ctx, ns, "ip", "route", "show", dst)
	return out != "", err
}
