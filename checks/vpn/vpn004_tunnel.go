package vpn

import (
	"context"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// VPNTunnel is VPN004: the pod has its tun/tap interface up, and the client pool is known
// (the return path and the ladders need it).
func VPNTunnel(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN004", func(ctx context.Context) engine.Outcome { return t.tunnelOutcome(ctx) })
}

type tunIface struct {
	Name  string
	Kind  string // "tun" or "tap"
	Addrs []linuxnet.IfAddr
}

// tunnelFact is the pod's side of the tunnel.
type tunnelFact struct {
	Tunnels []tunIface
	// IPTool is false when the image has no `ip`: addresses then come from the routes only.
	IPTool bool
	Routes []linuxnet.Route
	// Uplink is the interface of the default route, where masquerade must apply.
	Uplink string
	Resolv linuxnet.ResolvConf
	Config linuxnet.OpenVPNConfig
	// ConfigFrom names what was read (the process's command line, config files); ConfigNotes
	// what could not be.
	ConfigFrom  []string
	ConfigNotes []string
	Pool        netip.Prefix
	PoolSource  string
	// ServerAddr is the server's own tunnel address: the first hop clients reach.
	ServerAddr netip.Addr
	// Peers are client tunnel addresses known to be there (point-to-point peer, status file).
	Peers       []netip.Addr
	PeersSource string
}

const tunnelScript = `echo "@@ip-addr"; ip -o addr show 2>/dev/null || echo "@@unavailable"
echo "@@route"; cat /proc/net/route 2>/dev/null
echo "@@tun"; for d in /sys/class/net/*; do [ -r "$d/tun_flags" ] && echo "${d##*/} $(cat "$d/tun_flags")"; done
echo "@@resolv"; cat /etc/resolv.conf 2>/dev/null
echo "@@openvpn"; printf 'self\t%s\n' "$(readlink /proc/self/ns/net 2>/dev/null)"; for p in /proc/[0-9]*; do c=$(tr '\0\n' '\037 ' < "$p/cmdline" 2>/dev/null); case "$c" in *openvpn*) printf '%s\t%s\t%s\t%s\n' "${p#/proc/}" "$(readlink "$p/ns/net" 2>/dev/null)" "$(readlink "$p/cwd" 2>/dev/null)" "$c";; esac; done
echo "@@end"`

func tunnelCommand() []string { return []string{"sh", "-c", tunnelScript} }

// sections splits "@@name" delimited output.
func sections(out string) map[string]string {
	m := map[string]string{}
	cur := ""
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
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

func (t *vpnTrace) podTunnel(ctx context.Context, p *vpnPod) (tunnelFact, error) {
	return p.tunnel.get(ctx, func(ctx context.Context) (tunnelFact, error) {
		out, _, err := t.exec(ctx, p, tunnelCommand(), execTimeout)
		if err != nil {
			return tunnelFact{}, fmt.Errorf("reading the interfaces of %s: %w", p.object(), err)
		}
		sec := sections(out)
		if _, ok := sec["end"]; !ok {
			return tunnelFact{}, fmt.Errorf("reading the interfaces of %s: the output was cut", p.object())
		}
		_, noIP := sec["unavailable"] // "ip" failed: its marker opened a section of its own
		f := tunnelFact{IPTool: !noIP}
		f.Routes = linuxnet.ParseProcRoute(sec["route"], t.nodeBigEndian(ctx, p.Pod.Spec.NodeName))
		for _, r := range f.Routes {
			if r.Default() && f.Uplink == "" {
				f.Uplink = r.Iface
			}
		}
		f.Resolv = linuxnet.ParseResolvConf(sec["resolv"])
		f.Tunnels = tunnels(sec["tun"], linuxnet.ParseIPAddr(sec["ip-addr"]))
		t.readOpenVPNConfig(ctx, p, sec["openvpn"], &f)
		f.derivePoolAndPeers()
		return f, nil
	})
}

// tunnels lists tun/tap interfaces (tun_flags: 0x1 tun, 0x2 tap) with their addresses.
func tunnels(tunSection string, ifs []linuxnet.Interface) []tunIface {
	var out []tunIface
	for _, line := range strings.Split(tunSection, "\n") {
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
		ti := tunIface{Name: f[0], Kind: kind}
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
	for _, line := range strings.Split(section, "\n") {
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
func (t *vpnTrace) readOpenVPNConfig(ctx context.Context, p *vpnPod, section string, f *tunnelFact) {
	procs := openvpnProcs(section)
	if len(procs) == 0 {
		f.ConfigNotes = append(f.ConfigNotes, "no openvpn process is visible from container "+p.Container)
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
		text, _, err := t.exec(ctx, p, []string{"cat", file}, execTimeout)
		if err != nil {
			f.ConfigNotes = append(f.ConfigNotes, fmt.Sprintf("%s not readable: %v", file, err))
			continue
		}
		f.Config.ParseOpenVPNConfig(text)
		f.ConfigFrom = append(f.ConfigFrom, file)
	}
	if sf := f.Config.StatusFile; sf != "" {
		sf = resolve(sf)
		if text, _, err := t.exec(ctx, p, []string{"cat", sf}, execTimeout); err == nil {
			if peers := linuxnet.ParseOpenVPNStatus(text); len(peers) > 0 {
				f.Peers, f.PeersSource = peers, "connected clients in "+sf
			}
		}
	}
}

// derivePoolAndPeers decides the client pool: the configuration first, then a subnet on the
// tunnel, then a route through the tunnel, then the point-to-point peer alone.
func (f *tunnelFact) derivePoolAndPeers() {
	var tunNames []string
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
func (t *vpnTrace) nodeBigEndian(ctx context.Context, node string) bool {
	if node == "" {
		return false
	}
	n, err := t.env.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	return err == nil && n.Status.NodeInfo.Architecture == "s390x"
}

func (t *vpnTrace) tunnelOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	type res struct {
		f   tunnelFact
		err error
	}
	rs := forEachPod(ctx, pods.Running, func(ctx context.Context, p *vpnPod) res {
		f, err := t.podTunnel(ctx, p)
		return res{f, err}
	})
	var fs []engine.Finding
	var errs []string
	for i, r := range rs {
		p := pods.Running[i]
		if r.err != nil {
			errs = append(errs, r.err.Error())
			continue
		}
		fs = append(fs, tunnelFindings(p, r.f)...)
	}
	if len(errs) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: fmt.Errorf("%s", strings.Join(errs, "; "))}
	}
	return engine.Outcome{Findings: fs}
}

func tunnelFindings(p *vpnPod, f tunnelFact) []engine.Finding {
	obj := p.object()
	if len(f.Tunnels) == 0 {
		return []engine.Finding{{Code: "VPN004-NO-TUNNEL", Severity: engine.SeverityFail, Object: obj,
			Message:     "no tun or tap interface in the pod: OpenVPN has not opened its tunnel, so nothing can be forwarded yet (it needs NET_ADMIN and /dev/net/tun)",
			Remediation: fmt.Sprintf("kubectl -n %s logs %s -c %s --tail=50", p.Ref.Namespace, p.Ref.Name, p.Container)}}
	}
	var descr []string
	for _, ti := range f.Tunnels {
		d := ti.Name + " (" + ti.Kind + ")"
		for _, a := range ti.Addrs {
			d += " " + a.Prefix.String()
			if a.Peer.IsValid() {
				d += " peer " + a.Peer.String()
			}
		}
		descr = append(descr, d)
	}
	ev := map[string]any{"interfaces": descr, "uplink": f.Uplink}
	if len(f.ConfigFrom) > 0 {
		ev["configFrom"] = f.ConfigFrom
	}
	if len(f.ConfigNotes) > 0 {
		ev["configNotes"] = f.ConfigNotes
	}
	if !f.IPTool {
		ev["note"] = "the image has no `ip`: addresses were inferred from the routing table"
	}
	var fs []engine.Finding
	if f.Pool.IsValid() {
		ev["pool"] = f.Pool.String()
		ev["poolFrom"] = f.PoolSource
		if len(f.Peers) > 0 {
			ev["peers"] = fmt.Sprint(f.Peers)
		}
		fs = append(fs, engine.Finding{Code: "VPN004-TUNNEL", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("tunnel %s; clients use %s (from %s)", strings.Join(descr, ", "), f.Pool, f.PoolSource)})
	} else {
		fs = append(fs, engine.Finding{Code: "VPN004-POOL-UNKNOWN", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("tunnel %s, but the client pool could not be told (no readable OpenVPN configuration, no subnet or route on the tunnel): the return path cannot be matched to it", strings.Join(descr, ", "))})
	}
	// Only a server-mode configuration pushes options (static-key point-to-point cannot).
	if f.Config.Server.IsValid() || f.Config.PoolRange.IsValid() {
		if len(f.Config.PushDNS) > 0 {
			fs = append(fs, engine.Finding{Code: "VPN004-PUSHED-DNS", Severity: engine.SeverityInfo, Object: obj,
				Message: fmt.Sprintf("clients are told to use DNS %v (push dhcp-option DNS), search %v", f.Config.PushDNS, f.Config.PushDomain)})
		} else {
			fs = append(fs, engine.Finding{Code: "VPN004-NO-PUSHED-DNS", Severity: engine.SeverityInfo, Object: obj,
				Message: "the server pushes no DNS server: clients resolve cluster names only if their own resolver sends them to the cluster DNS"})
		}
	}
	return fs
}
