package vpn

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// A client sends a packet into the tunnel only when its routing table says so: the routes the
// server pushes (`push "route NET MASK"`, server mode only) or the client's own. Without them
// the packets for pods and Services leave by the client's default route and never reach the
// VPN pod, whatever its forwarding: that is the client's routes, not forwarding.

// routeTarget is an address clients must send into the tunnel.
type routeTarget struct {
	Addr netip.Addr
	Desc string
	// Service is set for the Service VIP (pushed as the Service ranges), else a pod.
	Service bool
}

func (r routeTarget) String() string { return r.Addr.String() + " (" + r.Desc + ")" }

// routeTargets are the ladder's pod and VIP.
func routeTargets(lt facts.Targets) []routeTarget {
	var out []routeTarget
	if lt.PodIP.IsValid() {
		out = append(out, routeTarget{Addr: lt.PodIP, Desc: lt.PodDesc})
	}
	if lt.VIP.IsValid() {
		out = append(out, routeTarget{Addr: lt.VIP, Desc: lt.VIPDesc, Service: true})
	}
	return out
}

// serverMode reports whether the configuration is a server's, which pushes options to its
// clients; a static-key point-to-point tunnel cannot push, the client's own routes apply.
func serverMode(cfg linuxnet.OpenVPNConfig) bool {
	return cfg.Server.IsValid() || cfg.PoolRange.IsValid()
}

// unpushed are the targets no pushed route covers.
func unpushed(cfg linuxnet.OpenVPNConfig, targets []routeTarget) []routeTarget {
	var out []routeTarget
	for _, t := range targets {
		if !slices.ContainsFunc(cfg.PushRoutes, func(p netip.Prefix) bool { return p.Contains(t.Addr) }) {
			out = append(out, t)
		}
	}
	return out
}

// rangesToRoute are the ranges that route the missing targets into the tunnel: every pod
// range for a pod, every Service range for a VIP, the address alone when the ranges could not
// be read.
func rangesToRoute(lt facts.Targets, missing []routeTarget) []netip.Prefix {
	var ranges []netip.Prefix
	for _, t := range missing {
		rs := lt.PodCIDRs
		if t.Service {
			rs = lt.ServiceCIDRs
		}
		if !slices.ContainsFunc(rs, func(p netip.Prefix) bool { return p.Contains(t.Addr) }) {
			rs = []netip.Prefix{netip.PrefixFrom(t.Addr, 32)}
		}
		for _, r := range rs {
			if !slices.Contains(ranges, r) {
				ranges = append(ranges, r)
			}
		}
	}
	return ranges
}

// pushRoutesFix is the server configuration that pushes the routes to every client.
func pushRoutesFix(lt facts.Targets, missing []routeTarget) string {
	ranges := rangesToRoute(lt, missing)
	lines := make([]string, 0, 1+len(ranges))
	lines = append(lines, "# in the OpenVPN server configuration, then restart the server and reconnect the clients:")
	for _, r := range ranges {
		lines = append(lines, openVPNPush("route", r.Addr().String(), netmask(r)))
	}
	return strings.Join(lines, "\n")
}

// clientRoutesFix is the client configuration that routes the ranges into a point-to-point
// tunnel, which cannot push them.
func clientRoutesFix(lt facts.Targets, missing []routeTarget) string {
	ranges := rangesToRoute(lt, missing)
	lines := make([]string, 0, 1+len(ranges))
	lines = append(lines, "# in each client's OpenVPN configuration, then reconnect:")
	for _, r := range ranges {
		lines = append(lines, openVPNDirective("route", r.Addr().String(), netmask(r)))
	}
	return strings.Join(lines, "\n")
}

// netmask is a prefix's mask in dotted form, as OpenVPN's route directives take it.
func netmask(p netip.Prefix) string {
	m := uint32(0)
	if p.Bits() > 0 {
		m = ^uint32(0) << (32 - p.Bits())
	}
	return fmt.Sprintf("%d.%d.%d.%d", m>>24, m>>16&0xff, m>>8&0xff, m&0xff)
}

// notThroughTunnel are the targets this machine does not send into the tunnel, with how it
// sends them.
func notThroughTunnel(routes facts.ClientRoutes, targets []routeTarget) []string {
	var out []string
	for _, t := range targets {
		if r := routes.For(t.Addr); r != nil && r.SourceErr == nil && !r.ThroughTunnel {
			out = append(out, t.String()+" "+routeWords(*r))
		}
	}
	return out
}

// routeWords says how this machine sends packets to one address.
func routeWords(r facts.RouteTo) string {
	if r.NoRoute {
		return "has no route to it (network unreachable), so nothing goes into the tunnel"
	}
	via := ""
	if r.Route != nil {
		via = " through " + r.Route.Iface
		if r.Route.Gateway.IsValid() && !r.Route.Gateway.IsUnspecified() {
			via += " via " + r.Route.Gateway.String()
		}
		via += " (route " + r.Route.Dest.String() + ")"
	}
	if r.ThroughTunnel {
		return "goes into the tunnel" + via + ", from " + r.Source.String()
	}
	return "leaves" + via + " from " + r.Source.String() + ", not into the tunnel"
}

func targetList(ts []routeTarget) string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.String())
	}
	return strings.Join(out, " and ")
}
