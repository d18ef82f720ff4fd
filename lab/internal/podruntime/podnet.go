package podruntime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// A pod on a dedicated node gets a network namespace of its own, as a container runtime gives
// every pod sandbox: lab-pod-<uid8> (/run/netns/lab-pod-<uid8>, so that `ip netns exec` runs its
// processes), set up by the real CNI plugins through libcni (cni.go): the node's configuration
// joins it to its node with a veth pair. The kernel gives the new namespace its IPv4 settings
// (ip_forward included) from the initial namespace, not from the node's (net/ipv4/devinet.c,
// devinet_init_net); then the CNI's plugins write what they write (tuning its sysctl map), then
// the pod's sysctls and its init containers' writes apply. Pods on the other nodes share their
// node's namespace.

// podNetNSPrefix names the lab's pod namespaces; `lab down` removes every namespace with it.
const podNetNSPrefix = "lab-pod-"

// PodNetNS is the network namespace of a pod that has one of its own.
func PodNetNS(uid types.UID) string { return podNetNSPrefix + shortUID(uid) }

// IsPodNetNS reports whether a namespace name is one of the lab's pod namespaces.
func IsPodNetNS(name string) bool { return strings.HasPrefix(name, podNetNSPrefix) }

func shortUID(uid types.UID) string {
	s := strings.ReplaceAll(string(uid), "-", "")
	if len(s) > 8 {
		s = s[:8]
	}
	return s
}

// OwnNamespace reports whether pod p on node has a network namespace of its own, set up by
// the real CNI plugins: every pod of the dedicated node and, on the shared nodes, a pod that
// maps hostPorts (issue 26's hostPort form: the real portmap plugin DNATs the node's
// addresses to a pod namespace; a pod sharing its node's namespace has nothing to map to).
// p nil asks about the node alone.
func OwnNamespace(node layout.Node, p *corev1.Pod) bool {
	return node.Dedicated || (p != nil && !p.Spec.HostNetwork && (MapsHostPorts(p) || p.Annotations[OwnNetNSAnnotation] == "true"))
}

// OwnNetNSAnnotation asks for a pod namespace of its own on a shared node. A pod sharing its
// node's namespace has its IP as a local address of the node, which no real node does: with a
// hostPort on that node, portmap's `--dst-type LOCAL` DNAT (containernetworking/plugins
// portmap_iptables.go) then captures what other nodes send to that pod on the same port (the
// cluster DNS on 53 beside a hostPort 53). The hostPort form moves such pods into namespaces
// of their own, as on a real node.
const OwnNetNSAnnotation = "lab.lanaccess.io/own-netns"

// MapsHostPorts reports whether a container of p declares a hostPort.
func MapsHostPorts(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				return true
			}
		}
	}
	return false
}

// sandboxFile records a pod namespace's set-up: it is made once per pod, as a sandbox is.
const sandboxFile = "sandbox.json"

// Sandbox is what was made for a pod: its namespace, the CNI configuration that set it up (the
// node's file, the stand-ins played, the list as run: DEL runs the same) and the pod's writes.
type Sandbox struct {
	NetNS     string          `json:"netns"`
	HostVeth  string          `json:"hostVeth"`
	CNIConfig string          `json:"cniConfig,omitempty"`
	StandIns  []string        `json:"standIns,omitempty"`
	Network   json.RawMessage `json:"network,omitempty"`
	Writes    []string        `json:"writes,omitempty"`
}

// ReadSandbox reads a pod directory's sandbox record.
func ReadSandbox(dir string) (Sandbox, error) {
	var sb Sandbox
	b, err := os.ReadFile(filepath.Join(dir, sandboxFile))
	if err != nil {
		return sb, err
	}
	return sb, json.Unmarshal(b, &sb)
}

// ensureSandbox makes the pod's network namespace once: namespace, resolv.conf, the CNI's ADD,
// then the pod's sysctls.
func (r *Runtime) ensureSandbox(ctx context.Context, dir string, p *corev1.Pod, node layout.Node, resolvConf []byte) error {
	path := filepath.Join(dir, sandboxFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	sb := Sandbox{NetNS: PodNetNS(p.UID)}
	if ok, err := netns.Exists(ctx, sb.NetNS); err != nil {
		return err
	} else if ok {
		// Left by a set-up that failed half-way: release what the CNI holds, start over.
		r.cniRelease(ctx, node, podRef{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name}, sb.NetNS)
		if err := netns.Delete(ctx, sb.NetNS); err != nil {
			return err
		}
	}
	if err := createPodNetNS(ctx, sb.NetNS, resolvConf); err != nil {
		return fmt.Errorf("pod network namespace %s: %w", sb.NetNS, err)
	}
	if err := r.cniAdd(ctx, &sb, node, p); err != nil {
		return fmt.Errorf("pod network namespace %s: %w", sb.NetNS, err)
	}
	if !node.Dedicated {
		if err := r.natOutgoing(ctx, node, p); err != nil {
			return fmt.Errorf("pod network namespace %s: %w", sb.NetNS, err)
		}
	}
	for _, kv := range SysctlPlan(p) {
		if err := netns.Sysctl(ctx, sb.NetNS, kv[0], kv[1]); err != nil {
			return fmt.Errorf("pod network namespace %s: %w", sb.NetNS, err)
		}
		sb.Writes = append(sb.Writes, kv[0]+"="+kv[1])
	}
	b, err := json.MarshalIndent(sb, "", "  ")
	if err != nil {
		return err
	}
	how := "as it is"
	if len(sb.StandIns) > 0 {
		how = "playing " + strings.Join(sb.StandIns, ", ")
	}
	r.Log.Printf("pod %s/%s: network namespace %s on %s, CNI %s %s, pod writes [%s]", p.Namespace, p.Name, sb.NetNS, node.NS, sb.CNIConfig, how, strings.Join(sb.Writes, ", "))
	return os.WriteFile(path, b, 0o600)
}

// createPodNetNS creates the namespace and the resolv.conf its processes get.
func createPodNetNS(ctx context.Context, name string, resolvConf []byte) error {
	if err := netns.Create(ctx, name, ""); err != nil {
		return err
	}
	// `ip netns exec` mounts this file over /etc/resolv.conf: the pod's own, per its dnsPolicy.
	if err := os.MkdirAll(layout.ResolvConfDir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(layout.ResolvConfDir(name), "resolv.conf"), resolvConf, 0o644) //nolint:gosec // resolv.conf: every process in the pod reads it, whatever its user
}

// routeToPod routes prefixes from the node to a pod in its own namespace (the VPN pool behind
// the VPN pod: what the cluster routes back reaches the pod), through the node's end of its veth.
// The route is onlink: ptp routes the pod IP with scope host (containernetworking/plugins
// pkg/ip AddHostRoute), and a gateway the kernel resolves through a scope-host route is not used
// as one (net/ipv4/route.c rt_set_nexthop keeps the gateway only for a link-scope nexthop): the
// node would ARP for each pool address on the veth and the replies to the pool would be lost.
// Calico's own routes to pods are link-scope, so on a Calico node the plain route works.
func routeToPod(ctx context.Context, node layout.Node, dir string, p *corev1.Pod, prefixes []string) error {
	sb, err := ReadSandbox(dir)
	if err != nil {
		return err
	}
	for _, prefix := range prefixes {
		if _, err := netns.Run(ctx, node.NS, "ip", "route", "replace", prefix, "via", p.Status.PodIP, "dev", sb.HostVeth, "onlink"); err != nil {
			return err
		}
	}
	return nil
}

// PodDir is the directory the runtime keeps a pod's files, pidfiles and logs in.
func PodDir(l layout.Layout, p *corev1.Pod) string {
	return filepath.Join(l.PodsDir(), PodDirName(p))
}

// natOutgoing masquerades what a pod namespace on a shared node sends outside the cluster's
// pod range, as Calico does for a pool with natOutgoing (calico.yaml's default pool; flannel's
// --ip-masq likewise): the control plane and the lab's internet do not route pod addresses
// back. The rule carries the pod's comment, so teardown removes it with the pod's others.
func (r *Runtime) natOutgoing(ctx context.Context, node layout.Node, p *corev1.Pod) error {
	_, err := netns.Run(ctx, node.NS, "iptables", "-t", "nat", "-A", "POSTROUTING", "-s", p.Status.PodIP+"/32",
		"!", "-d", r.Layout.ClusterPodCIDR, "-m", "comment", "--comment", PodRuleComment(p), "-j", "MASQUERADE")
	return err
}
