package facts

import (
	"context"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

const tunnelScript = `echo "@@ip-addr"; ip -o addr show 2>/dev/null || echo "@@unavailable"
echo "@@route"; cat /proc/net/route 2>/dev/null
echo "@@tun"; for d in /sys/class/net/*; do [ -r "$d/tun_flags" ] && echo "${d##*/} $(cat "$d/tun_flags")"; done
echo "@@resolv"; cat /etc/resolv.conf 2>/dev/null
echo "@@openvpn"; printf 'self\t%s\n' "$(readlink /proc/self/ns/net 2>/dev/null)"; for p in /proc/[0-9]*; do c=$(tr '\0\n' '\037 ' < "$p/cmdline" 2>/dev/null); case "$c" in *openvpn*) printf '%s\t%s\t%s\t%s\n' "${p#/proc/}" "$(readlink "$p/ns/net" 2>/dev/null)" "$(readlink "$p/cwd" 2>/dev/null)" "$c";; esac; done
echo "@@end"`

func (g *Gatherer) readTunnel(ctx context.Context, m *podMemos) (Tunnel, error) {
	out, _, err := g.exec(ctx, m, []string{"sh", "-c", tunnelScript}, g.execTimeout())
	if err != nil {
		return Tunnel{}, fmt.Errorf("reading the interfaces of %s: %w", m.object(), err)
	}
	sec := sections(out)
	if _, ok := sec["end"]; !ok {
		return Tunnel{}, fmt.Errorf("reading the interfaces of %s: the output was cut", m.object())
	}
	_, noIP := sec["unavailable"] // "ip" failed: its marker opened a section of its own
	f := Tunnel{IPTool: !noIP}
	f.Routes = linuxnet.ParseProcRoute(sec["route"], g.nodeBigEndian(ctx, m.pod.Spec.NodeName))
	for _, r := range f.Routes {
		if r.Default() && f.Uplink == "" {
			f.Uplink = r.Iface
		}
	}
	f.Resolv = linuxnet.ParseResolvConf(sec["resolv"])
	f.Tunnels = tunnels(sec["tun"], linuxnet.ParseIPAddr(sec["ip-addr"]))
	g.readOpenVPNConfig(ctx, m, sec["openvpn"], &f)
	f.derivePoolAndPeers()
	return f, nil
}

// sections splits "@@name" delimited output.
func sections(out string) map[string]string {
	m := map[string]string{}
	cur := ""
	var b strings.Builder
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "@@") && !strings.Contains(line, " ") {
			if cur != "" {
				m[cur] = b.String()
			}
			cur = strings.TrimPrefix(line, "@@")
			b.Reset()
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if cur != "" {
		m[cur] = b.String()
	}
	return m
}

// tunnels lists tun/tap interfaces (tun_flags: 0x1 tun, 0x2 tap) with their addresses.
func tunnels(tunSection string, ifs []linuxnet.Interface) []TunIface {
	var out []TunIface
	for line := range strings.SplitSeq(tunSection, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 32)
		if err != nil {
			continue
		}
		kind := "tun"
		if flags&0x2 != 0 {
			kind = "tap"
		}
		ti := TunIface{Name: f[0], Kind: kind}
		for _, i := range ifs {
			if i.Name == f[0] {
				ti.Addrs = i.IPv4()
			}
		}
		out = append(out, ti)
	}
	return out
}

// openvpnProc is an openvpn process seen from the pod.
type openvpnProc struct {
	pid, netns, cwd string
	args            []string
}

// openvpnProcs reads the "@@openvpn" section: a "self<TAB>netns" line, then one line per
// process whose command line mentions openvpn, "pid<TAB>netns<TAB>cwd<TAB>args" (arguments
// separated by \x1f). Processes in another network namespace (visible when the container shares
// the host's PID namespace) are not this pod's server; a shell whose script mentions openvpn is
// not one either.
func openvpnProcs(section string) []openvpnProc {
	var self string
	var out []openvpnProc
	for line := range strings.SplitSeq(section, "\n") {
		f := strings.Split(line, "\t")
		switch {
		case len(f) == 2 && f[0] == "self":
			self = f[1]
		case len(f) == 4:
			args := strings.Split(strings.TrimRight(f[3], "\x1f"), "\x1f")
			if len(args) == 0 || !strings.HasPrefix(path.Base(args[0]), "openvpn") {
				continue
			}
			if self != "" && f[1] != "" && f[1] != self {
				continue
			}
			out = append(out, openvpnProc{pid: f[0], netns: f[1], cwd: f[2], args: args})
		}
	}
	return out
}

// readOpenVPNConfig reads the OpenVPN process's command line and the configuration files it
// names (relative to its working directory).
func (g *Gatherer) readOpenVPNConfig(ctx context.Context, m *podMemos, section string, f *Tunnel) {
	procs := openvpnProcs(section)
	if len(procs) == 0 {
		f.ConfigNotes = append(f.ConfigNotes, "no openvpn process is visible from container "+m.container)
		return
	}
	proc := procs[0]
	f.Config.ParseOpenVPNArgs(proc.args)
	f.ConfigFrom = append(f.ConfigFrom, "the command line of pid "+proc.pid)
	resolve := func(file string) string {
		if !path.IsAbs(file) && proc.cwd != "" {
			return path.Join(proc.cwd, file)
		}
		return file
	}
	for _, file := range f.Config.ConfigFiles {
		file = resolve(file)
		text, _, err := g.exec(ctx, m, []string{"cat", file}, g.execTimeout())
		if err != nil {
			f.ConfigNotes = append(f.ConfigNotes, fmt.Sprintf("%s not readable: %v", file, err))
			continue
		}
		f.Config.ParseOpenVPNConfig(text)
		f.ConfigFrom = append(f.ConfigFrom, file)
	}
	if sf := f.Config.StatusFile; sf != "" {
		sf = resolve(sf)
		if text, _, err := g.exec(ctx, m, []string{"cat", sf}, g.execTimeout()); err == nil {
			if peers := linuxnet.ParseOpenVPNStatus(text); len(peers) > 0 {
				f.Peers, f.PeersSource = peers, "connected clients in "+sf
			}
		}
	}
}

// derivePoolAndPeers decides the client pool: the configuration first, then a subnet on the
// tunnel, then a route through the tunnel, then the point-to-point peer alone.
func (f *Tunnel) derivePoolAndPeers() {
	tunNames := make([]string, 0, len(f.Tunnels))
	for _, ti := range f.Tunnels {
		tunNames = append(tunNames, ti.Name)
		for _, a := range ti.Addrs {
			if !f.ServerAddr.IsValid() {
				f.ServerAddr = a.Prefix.Addr()
			}
			if a.Peer.IsValid() && len(f.Peers) == 0 {
				f.Peers, f.PeersSource = []netip.Addr{a.Peer.Addr()}, "the point-to-point peer of "+ti.Name
			}
		}
	}
	if !f.ServerAddr.IsValid() && f.Config.Local.IsValid() {
		f.ServerAddr = f.Config.Local
	}
	if p := f.Config.ClientPool(); p.IsValid() && p.Bits() < 32 {
		f.Pool, f.PoolSource = p, "the OpenVPN configuration ("+strings.Join(f.ConfigFrom, ", ")+")"
		return
	}
	for _, ti := range f.Tunnels {
		for _, a := range ti.Addrs {
			if !a.Peer.IsValid() && a.Prefix.Bits() < 32 {
				f.Pool, f.PoolSource = a.Prefix.Masked(), "the subnet of "+ti.Name
				return
			}
		}
	}
	for _, r := range f.Routes {
		if slices.Contains(tunNames, r.Iface) && r.Dest.Bits() < 32 && !r.Default() {
			f.Pool, f.PoolSource = r.Dest, "the route through "+r.Iface
			return
		}
	}
	if p := f.Config.ClientPool(); p.IsValid() {
		f.Pool, f.PoolSource = p, "the point-to-point peer in the OpenVPN configuration"
		return
	}
	if len(f.Peers) == 1 {
		f.Pool, f.PoolSource = netip.PrefixFrom(f.Peers[0], 32), f.PeersSource
	}
}

// nodeBigEndian reads the node's architecture: /proc/net/route prints addresses in CPU order.
func (g *Gatherer) nodeBigEndian(ctx context.Context, node string) bool {
	if node == "" {
		return false
	}
	n, err := g.seams.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	return err == nil && n.Status.NodeInfo.Architecture == "s390x"
}
