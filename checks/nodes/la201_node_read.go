package nodes

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/procnet"
)

// nodeSocket is a socket found on one of our ports, with its owners when they could be read.
type nodeSocket struct {
	procnet.Socket
	Key    servicePortKey
	Owners []procnet.Owner
}

// nodeRead is what one node's socket tables say about our ports.
type nodeRead struct {
	Via string
	// Conflicts are bound to the wildcard or to the node's address; Loopback ones are not
	// reachable on the address and are reported as harmless.
	Conflicts []nodeSocket
	Loopback  []nodeSocket
	// OwnerNote says why some owners are unnamed ("" when every owner was found).
	OwnerNote string
	Missing   []procnet.Table
}

// DefaultExecTimeout bounds each command on a node when Env.ExecTimeout is not set.
const DefaultExecTimeout = 20 * time.Second

func readNodeSockets(ctx context.Context, sh *podexec.NodeShell, n listenerNode, limit time.Duration) (nodeRead, error) {
	r := nodeRead{Via: sh.Via()}
	rctx, cancel := context.WithTimeout(ctx, limit)
	out, _, err := sh.Exec(rctx, procnet.TablesCommand())
	cancel()
	if err != nil {
		return r, fmt.Errorf("reading /proc/net through %s: %w", r.Via, err)
	}
	dump, err := procnet.SplitDump(out)
	if err != nil {
		return r, fmt.Errorf("reading /proc/net through %s: %w", r.Via, err)
	}
	r.Missing = dump.Missing
	// s390x is the one big-endian architecture Kubernetes runs on.
	opts := procnet.Options{BigEndian: n.Node.Status.NodeInfo.Architecture == "s390x"}
	for _, t := range procnet.Tables() {
		data, ok := dump.Tables[t]
		if !ok {
			continue
		}
		socks, bad := procnet.Listeners(t, data, opts)
		if len(bad) > 0 {
			// An unreadable row may be the conflict: unknown, not a pass.
			return r, fmt.Errorf("%d row(s) of /proc/net/%s could not be read, first: %v", len(bad), t, bad[0])
		}
		for _, s := range socks {
			k := servicePortKey{Protocol: t.Protocol(), Port: s.Local.Port()}
			if _, ours := n.Ports[k]; !ours {
				continue
			}
			a := s.Local.Addr().Unmap()
			switch {
			case a.IsUnspecified() || n.carries(a):
				r.Conflicts = append(r.Conflicts, nodeSocket{Socket: s, Key: k})
			case a.IsLoopback():
				r.Loopback = append(r.Loopback, nodeSocket{Socket: s, Key: k})
			}
		}
	}
	if len(r.Conflicts) > 0 {
		r.OwnerNote = nameOwners(ctx, sh, r.Conflicts, limit)
	}
	return r, nil
}

// nameOwners fills Owners in place and returns why some could not be named.
func nameOwners(ctx context.Context, sh *podexec.NodeShell, socks []nodeSocket, limit time.Duration) string {
	switch {
	case !sh.HostPID && sh.Helper:
		// The default helper reads sockets only (podexec.HelperPod says what each read needs).
		return "the owning process is not named: the helper reads the socket tables only (hostNetwork, uid 65534, no capability); naming it needs the node's PID namespace, uid 0, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, i.e. node root: --name-owners, where the helper namespace admits it"
	case !sh.HostPID:
		return fmt.Sprintf("the owning process cannot be named: %s does not share the node's PID namespace", sh.Via())
	}
	inodes := make([]uint64, 0, len(socks))
	for _, s := range socks {
		if s.Inode != 0 {
			inodes = append(inodes, s.Inode)
		}
	}
	if len(inodes) == 0 {
		return "the kernel shows no inode for these sockets (owned by the kernel, or gone)"
	}
	octx, cancel := context.WithTimeout(ctx, limit)
	out, _, err := sh.Exec(octx, procnet.OwnersCommand(inodes))
	cancel()
	if err != nil {
		return "the owning process could not be read: " + err.Error()
	}
	owners, err := procnet.ParseOwners(out)
	if err != nil {
		return "the owning process could not be read: " + err.Error()
	}
	unnamed := 0
	for i := range socks {
		socks[i].Owners = owners.ByInode[socks[i].Inode]
		if len(socks[i].Owners) == 0 {
			unnamed++
		}
	}
	switch {
	case unnamed == 0:
		return ""
	case owners.Denied > 0:
		return fmt.Sprintf("the owning process of %d socket(s) was not found: %d process descriptors could not be read (another uid's needs CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE, a more capable process's CAP_SYS_PTRACE; an AppArmor profile on the runtime may refuse even those)", unnamed, owners.Denied)
	default:
		return fmt.Sprintf("no process holds %d of these sockets: they belong to the kernel (an in-kernel server) or their process just exited", unnamed)
	}
}

// ownerText is "pid 812 (nginx: master process /usr/sbin/nginx)" for each owner.
func ownerText(owners []procnet.Owner) string {
	parts := make([]string, 0, len(owners))
	for _, o := range owners {
		what := o.Cmdline
		if what == "" {
			what = o.Command
		}
		parts = append(parts, fmt.Sprintf("pid %d (%s)", o.PID, what))
	}
	return strings.Join(parts, ", ")
}

// isResolvedStub reports systemd-resolved's stub listeners (127.0.0.53, and 127.0.0.54 for its
// proxy-only stub): they are on loopback, so they never see traffic to the node address.
func isResolvedStub(a netip.AddrPort) bool {
	return a.Port() == 53 && (a.Addr() == netip.MustParseAddr("127.0.0.53") || a.Addr() == netip.MustParseAddr("127.0.0.54"))
}
