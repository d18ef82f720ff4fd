// Package netpol runs the real NetworkPolicy enforcer, sigs.k8s.io/kube-network-policies
// (lab/build.sh, KUBE_NETWORK_POLICIES_VERSION), once per node namespace, as its DaemonSet
// (the module's install.yaml) runs it on a node: in the node's network namespace, under the
// identity of its ServiceAccount kube-system/kube-network-policies (the module's ClusterRole:
// list and watch pods, namespaces and NetworkPolicies), reading the API only through
// rest.InClusterConfig. This package says how to start it and how to read what it programmed;
// labctl starts and stops it like every other lab daemon.
//
// How it judges (pkg/networkpolicy/controller.go, v0.8.0): an nftables table `inet
// kube-network-policies` whose postrouting chain sends to NFQUEUE the first packet of each
// connection (conntrack NEW; established and related ones are accepted, so are packets of
// sockets owned by uid 0) whose source or destination is in the set podips-v4 (or -v6): the
// addresses of the node's own pods (spec.nodeName) that some NetworkPolicy selects. DNS (UDP
// to port 53) is queued in a prerouting chain instead (its --netfilter-bug-1766-fix, on by
// default). The reader in user space then evaluates the source pod's egress policies and the
// destination pod's ingress policies (pods found by IP in its informer) and accepts or drops.
// This kernel cannot run that table (see HookRules): the lab queues the same packets with
// iptables, and the enforcer's own reader judges them.
package netpol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// The enforcer's identity, as its install.yaml names it.
const (
	Namespace      = "kube-system"
	ServiceAccount = "kube-network-policies"
)

// MetricsAddr is on each node namespace's loopback (every node has its own 127.0.0.1); the
// binary's default, :9080, would listen on the node's LAN address too.
const MetricsAddr = "127.0.0.1:10330"

// QueueID is the NFQUEUE number install.yaml passes (--nfqueue-id=98); the lab's latency
// fault uses queues from 10 up.
const QueueID = 98

// ProcName is the process name (pidfile, log) of a node's enforcer.
func ProcName(node string) string { return "kube-network-policies-" + node }

// Match is what the command line of a node's running enforcer (its supervisor) contains.
func Match(node string) string { return "--hostname-override=" + node + " --disable-nri" }

// SADir is the directory mounted at /var/run/secrets/kubernetes.io/serviceaccount in every
// enforcer's mount namespace: token (a TokenRequest of the ServiceAccount), ca.crt (the lab
// CA) and namespace, the files the kubelet projects into a pod.
func SADir(l layout.Layout) string { return l.Path("kube-network-policies", "serviceaccount") }

// WriteServiceAccount writes the files of SADir.
func WriteServiceAccount(l layout.Layout, token string, caPEM []byte) error {
	dir := SADir(l)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": caPEM, "namespace": []byte(Namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// mountScript runs in a mount namespace of the enforcer's own (unshare, propagation private:
// nothing reaches the machine's mounts) and puts the ServiceAccount files where
// rest.InClusterConfig reads them. A tmpfs over /var hides the machine's /var (and its
// /var/run, a symlink to /run): the enforcer needs nothing there, and without
// /var/run/nri/nri.sock its NRI plugin gives up ("nri plugin exited"), as --disable-nri would
// have it (v0.8.0 parses that flag but never passes it on: cmd/main.go). $1 is SADir, the rest
// the enforcer's command line.
const mountScript = `set -e
sa=$1; shift
mount -t tmpfs -o mode=0755 lab-netpol /var
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
mount --bind -o ro "$sa" /var/run/secrets/kubernetes.io/serviceaccount
exec "$@"`

// Spec is how labctl starts a node's enforcer: inside the node's network namespace, under `lab
// supervise` (restarted when it exits, as the kubelet restarts a DaemonSet's container), with
// KUBERNETES_SERVICE_HOST/PORT naming the API server's LAN address, reachable from every node.
// The state directory must not be under /var (the mount script hides /var).
func Spec(l layout.Layout, bin, node string) procs.Spec {
	host, port, _ := strings.Cut(strings.TrimPrefix(l.APIServerURL(), "https://"), ":")
	return procs.Spec{Name: ProcName(node), NS: node, Dir: l.StateDir,
		Env: []string{"KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port},
		Argv: []string{l.LabBinary(), "supervise", "--",
			"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", mountScript, "netpol-mounts", SADir(l),
			bin, "--hostname-override=" + node, "--disable-nri", "--metrics-bind-address=" + MetricsAddr,
			"--nfqueue-id=" + strconv.Itoa(QueueID), "--v=2"}}
}

// Ready reports whether a node's enforcer has synced its caches (it registers its metrics only
// then) and bound its queue (/proc/net/netfilter/nfnetlink_queue, per network namespace: queue
// number first), and the node's hook is in place.
func Ready(ctx context.Context, node string) error {
	m, err := netns.Run(ctx, node, "curl", "-sf", "--max-time", "2", "http://"+MetricsAddr+"/metrics")
	if err != nil {
		return fmt.Errorf("enforcer metrics of %s: %w", node, err)
	}
	if !strings.Contains(m, "kube_network_policies_packet_process_duration_microseconds") {
		return fmt.Errorf("the enforcer on %s has not synced its caches yet", node)
	}
	if _, err := netns.Run(ctx, node, "iptables", "-t", "security", "-S", hookChain); err != nil {
		return fmt.Errorf("the enforcer's hook on %s: %w", node, err)
	}
	q, err := netns.Run(ctx, node, "cat", "/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return err
	}
	for line := range strings.SplitSeq(q, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.Itoa(QueueID) {
			return nil
		}
	}
	return fmt.Errorf("the enforcer on %s has not bound NFQUEUE %d", node, QueueID)
}

// The hook. The enforcer programs an nftables table whose rules end in `queue num <id>`; this
// kernel has no nft_queue (CONFIG_NFT_QUEUE is not set: nft answers "Could not process rule:
// No such file or directory" to `queue`), so its whole batch fails ("netlink receive: no such
// file or directory" in its log, at every sync) and it programs nothing, while its reader
// binds the queue and judges whatever arrives there. The lab puts the same packets there with
// iptables' NFQUEUE target (xt_NFQUEUE, which this kernel has), in the security table, which
// nothing else in the lab uses: its FORWARD and OUTPUT chains run after the filter table's
// (kube-proxy's drops first) and before source NAT, with the addresses the enforcer's
// postrouting chain (priority srcnat-5) sees; FORWARD and INPUT stand for its prerouting DNS
// chain (priority dstnat+5, after DNAT). Rule for rule, from syncNFTablesRules and
// addDNSRacersWorkaroundRules (controller.go, v0.8.0): UDP to port 53 is left to the DNS
// chain; packets of sockets owned by uid 0 are accepted; established and related ones are
// accepted; the rest is queued when its source or destination is one of the node's pods. The
// one difference: the enforcer's set holds only the node's pods that a NetworkPolicy selects,
// the hook takes the node's whole pod CIDR. A packet between pods no policy selects is then
// judged too, and accepted (no policy isolates either end: evaluatePacket); a packet from a
// local pod to a remote pod that a policy isolates is judged, with the same policies, on the
// sender's node as well as on the receiver's.
const hookChain, dnsChain = "LAB-NETPOL", "LAB-NETPOL-DNS"

// HookRules is the iptables-restore input of a node's hook (the security table, whole).
func HookRules(podCIDR string) string {
	q := "-j NFQUEUE --queue-num " + strconv.Itoa(QueueID)
	return strings.Join([]string{"*security",
		":" + hookChain + " - [0:0]",
		":" + dnsChain + " - [0:0]",
		"-A " + hookChain + " -p udp --dport 53 -j RETURN",
		"-A " + hookChain + " -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
		"-A " + hookChain + " -s " + podCIDR + " " + q,
		"-A " + hookChain + " -d " + podCIDR + " " + q,
		"-A " + dnsChain + " -p udp --dport 53 -s " + podCIDR + " " + q,
		"-A " + dnsChain + " -p udp --dport 53 -d " + podCIDR + " " + q,
		"-A INPUT -j " + dnsChain,
		"-A FORWARD -j " + dnsChain,
		"-A FORWARD -j " + hookChain,
		"-A OUTPUT -m owner --uid-owner 0 -j RETURN",
		"-A OUTPUT -j " + hookChain,
		"COMMIT", ""}, "\n")
}

// InstallHook writes a node's hook (replacing the security table).
func InstallHook(ctx context.Context, node, podCIDR string) error {
	_, err := netns.RunInput(ctx, node, HookRules(podCIDR), "iptables-restore")
	return err
}

// Verdicts are the enforcer's packet counts by verdict ("accept", "drop"), summed over
// protocols (its metric kube_network_policies_packet_count).
func Verdicts(ctx context.Context, node string) (map[string]float64, error) {
	m, err := netns.Run(ctx, node, "curl", "-sf", "--max-time", "2", "http://"+MetricsAddr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("enforcer metrics of %s: %w", node, err)
	}
	return ParseVerdicts(m), nil
}

// ParseVerdicts sums kube_network_policies_packet_count by its verdict label.
func ParseVerdicts(metrics string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, "kube_network_policies_packet_count{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		for kv := range strings.SplitSeq(labels, ",") {
			if v, ok := strings.CutPrefix(kv, `verdict="`); ok {
				out[strings.TrimSuffix(v, `"`)] += f
			}
		}
	}
	return out
}
