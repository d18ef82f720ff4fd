package nodes

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ObservedIPVSFindings judges what the nodes' own stacks show: a node holding a peer's
// address on kube-ipvs0 answers for that peer whatever the configuration says (IPVS mode, or
// its leftovers after a switch). placed is nil when the nodes were not read.
func ObservedIPVSFindings(placed *noderead.NodeAddrs, owners map[netip.Addr][]string, r *noderead.NodeNetReader) []engine.Finding {
	if placed == nil {
		_, why := r.Available()
		return []engine.Finding{{Code: "LA202-NODES-NOT-READ", Severity: engine.SeverityInfo,
			Message: "the nodes' " + noderead.IPVSDevice + " was not read (" + why + "): the verdict rests on the configuration alone"}}
	}
	var out []engine.Finding
	for _, name := range slices.Sorted(maps.Keys(placed.Read)) {
		net := placed.Read[name]
		var peers []string
		for _, a := range net.IPVSAddrs() {
			for _, owner := range owners[a] {
				if owner != name {
					peers = append(peers, fmt.Sprintf("%s (%s)", a, owner))
					break
				}
			}
		}
		if len(peers) == 0 {
			continue
		}
		out = append(out, engine.Finding{Code: "LA202-PEER-ADDRESS-LOCAL", Severity: engine.SeverityFail, Object: "Node " + name,
			Message:  fmt.Sprintf("node %s holds its peers' addresses %s on %s: its traffic to them is delivered to itself (%s)", name, strings.Join(peers, ", "), noderead.IPVSDevice, ipvsIssues),
			Evidence: map[string]any{"node": name, "readWith": net.Via, "device": noderead.IPVSDevice, "peerAddresses": peers},
			Remediation: remedy.Commentf("# kube-proxy's IPVS cleanup deletes %s (run `kube-proxy --cleanup` on the node once kube-proxy no longer runs in IPVS mode, or reboot it)\n", noderead.IPVSDevice) +
				remedy.Comment("by hand on node "+name+": ip link delete "+noderead.IPVSDevice+" (kube-proxy in IPVS mode puts it back)")})
	}
	var unread []string
	for _, name := range slices.Sorted(maps.Keys(placed.Unread)) {
		if err := placed.Unread[name]; !errors.Is(err, noderead.ErrNodesNotRead) {
			unread = append(unread, err.Error())
		}
	}
	if len(unread) > 0 {
		out = append(out, engine.Finding{Code: "LA202-NODES-NOT-READ", Severity: engine.SeverityInfo,
			Message: "some nodes' " + noderead.IPVSDevice + " was not read: " + strings.Join(unread, "; ")})
	}
	return out
}

// remedyConfigMap sets one key of a ConfigMap to text.
func remedyConfigMap(ns, name, key, text string) string {
	return remedy.MergePatch(ns, "configmap", name, map[string]any{"data": map[string]any{key: text}})
}

// remedyRestart restarts a DaemonSet's pods, so that kube-proxy reads its new configuration.
func remedyRestart(ns, name string) string {
	return remedy.Kubectl(ns, "rollout", "restart", "daemonset", name)
}

// remedyFlag rewrites a DaemonSet's --proxy-mode word to iptables where it is written.
func remedyFlag(ns, name string, f kube.FlagRef) string {
	list := "args"
	if f.InCommand {
		list = "command"
	}
	path := "/spec/template/spec/containers/" + strconv.Itoa(f.Container) + "/" + list + "/" + strconv.Itoa(f.Index)
	return remedy.JSONPatch(ns, "daemonset", name,
		remedy.PatchOp{Op: "test", Path: path, Value: f.Word},
		remedy.PatchOp{Op: "replace", Path: path, Value: f.WordFor(kube.ModeIPTables)})
}
