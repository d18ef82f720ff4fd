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
// every pod sandbox: lab-pod-<uid8>, joined to its node by a veth pair (eth0 inside with the
// pod IP, the node's end routing that IP), like Calico's or the ptp plugin's plumbing. The
// kernel gives the new namespace its IPv4 settings (ip_forward included) from the initial
// namespace, not from the node's (net/ipv4/devinet.c, devinet_init_net); then the CNI step
// (cni.go) writes what the node's CNI configuration writes, then the pod's sysctls and its
// init containers' writes apply. Pods on the other nodes share their node's namespace.

// podNetNSPrefix names the lab's pod namespaces; `lab down` removes every namespace with it.
const podNetNSPrefix = "lab-pod-"

// PodNetNS is the network namespace of a pod that has one of its own.
func PodNetNS(uid types.UID) string { return podNetNSPrefix + shortUID(uid) }

// IsPodNetNS reports whether a namespace name is one of the lab's pod namespaces.
func IsPodNetNS(name string) bool { return strings.HasPrefix(name, podNetNSPrefix) }

// PodHostVeth is the node's end of the pod's veth pair.
func PodHostVeth(uid types.UID) string { return "lpod" + shortUID(uid) }

func shortUID(uid types.UID) string {
	s := strings.ReplaceAll(string(uid), "-", "")
	if len(s) > 8 {
		s = s[:8]
	}
	return s
}

// OwnNamespace reports whether the node's pods have network namespaces of their own.
func OwnNamespace(node layout.Node) bool { return node.Dedicated }

// sandboxFile records a pod namespace's set-up: it is made once per pod, as a sandbox is.
const sandboxFile = "sandbox.json"

// sandbox is what was made for a pod, and what its CNI step and sysctls wrote.
type sandbox struct {
	NetNS     string   `json:"netns"`
	HostVeth  string   `json:"hostVeth"`
	CNIConfig string   `json:"cniConfig,omitempty"`
	Writes    []string `json:"writes,omitempty"`
}

// ensureSandbox makes the pod's network namespace once: namespace, veth pair, address, routes,
// resolv.conf, then the CNI step and the pod's sysctls.
func (r *Runtime) ensureSandbox(ctx context.Context, dir string, p *corev1.Pod, node layout.Node, resolvConf []byte) error {
	path := filepath.Join(dir, sandboxFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	sb := sandbox{NetNS: PodNetNS(p.UID), HostVeth: PodHostVeth(p.UID)}
	if ok, err := netns.Exists(ctx, sb.NetNS); err != nil {
		return err
	} else if ok {
		// Left by a set-up that failed half-way: start over.
		if err := netns.Delete(ctx, sb.NetNS); err != nil {
			return err
		}
	}
	if err := plumb(ctx, sb, node, p.Status.PodIP, resolvConf); err != nil {
		return fmt.Errorf("pod network namespace %s: %w", sb.NetNS, err)
	}
	if err := r.configure(ctx, &sb, node, p); err != nil {
		return fmt.Errorf("pod network namespace %s: %w", sb.NetNS, err)
	}
	b, err := json.MarshalIndent(sb, "", "  ")
	if err != nil {
		return err
	}
	r.Log.Printf("pod %s/%s: network namespace %s on %s (%s)", p.Namespace, p.Name, sb.NetNS, node.NS, strings.Join(sb.Writes, ", "))
	return os.WriteFile(path, b, 0o600)
}

// plumb creates the namespace and joins it to its node.
func plumb(ctx context.Context, sb sandbox, node layout.Node, podIP string, resolvConf []byte) error {
	if err := netns.Create(ctx, sb.NetNS, ""); err != nil {
		return err
	}
	// `ip netns exec` mounts this file over /etc/resolv.conf: the pod's own, per its dnsPolicy.
	if err := os.MkdirAll(layout.ResolvConfDir(sb.NetNS), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(layout.ResolvConfDir(sb.NetNS), "resolv.conf"), resolvConf, 0o644); err != nil { //nolint:gosec // resolv.conf: every process in the pod reads it, whatever its user
		return err
	}
	steps := []struct {
		ns   string
		argv []string
	}{
		{"", []string{"ip", "link", "add", "eth0", "netns", sb.NetNS, "type", "veth", "peer", "name", sb.HostVeth, "netns", node.NS}},
		{sb.NetNS, []string{"ip", "addr", "add", podIP + "/32", "dev", "eth0"}},
		{sb.NetNS, []string{"ip", "link", "set", "eth0", "up"}},
		// No gateway address: the node's end answers ARP for whatever it routes (proxy ARP).
		{sb.NetNS, []string{"ip", "route", "add", "default", "dev", "eth0"}},
		{node.NS, []string{"sysctl", "-q", "-w", "net.ipv4.conf." + sb.HostVeth + ".proxy_arp=1"}},
		{node.NS, []string{"ip", "link", "set", sb.HostVeth, "up"}},
		{node.NS, []string{"ip", "route", "replace", podIP + "/32", "dev", sb.HostVeth}},
	}
	for _, s := range steps {
		if _, err := netns.Run(ctx, s.ns, s.argv...); err != nil {
			return err
		}
	}
	return nil
}

// configure runs the CNI step of the node's configuration, then applies the pod's sysctls.
func (r *Runtime) configure(ctx context.Context, sb *sandbox, node layout.Node, p *corev1.Pod) error {
	conf, writes, err := cniStep(r.Layout.NodeCNIDir(node.NS))
	if err != nil {
		// The runtime cannot set the sandbox up: the pod stays ContainerCreating.
		return err
	}
	sb.CNIConfig = conf
	for _, kv := range append(writes, SysctlPlan(p)...) {
		if err := netns.Sysctl(ctx, sb.NetNS, kv[0], kv[1]); err != nil {
			return err
		}
		sb.Writes = append(sb.Writes, kv[0]+"="+kv[1])
	}
	return nil
}

// cniStep is the configuration file the runtime loads from a node's CNI directory ("" when
// there is none) and the sysctl writes its plugins make in a new pod's namespace.
func cniStep(dir string) (string, [][2]string, error) {
	conf, err := CNIConfigFile(dir)
	if err != nil || conf == "" {
		return "", nil, err
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		return "", nil, err
	}
	writes, err := CNISysctls(b)
	if err != nil {
		return "", nil, fmt.Errorf("CNI configuration %s: %w", conf, err)
	}
	return conf, writes, nil
}

// routeToPod routes prefixes from the node to a pod in its own namespace (the VPN pool behind
// the VPN pod: what the cluster routes back reaches the pod).
func routeToPod(ctx context.Context, node layout.Node, p *corev1.Pod, prefixes []string) error {
	for _, prefix := range prefixes {
		if _, err := netns.Run(ctx, node.NS, "ip", "route", "replace", prefix, "via", p.Status.PodIP, "dev", PodHostVeth(p.UID)); err != nil {
			return err
		}
	}
	return nil
}

// PodDir is the directory the runtime keeps a pod's files, pidfiles and logs in.
func PodDir(l layout.Layout, p *corev1.Pod) string {
	return filepath.Join(l.PodsDir(), PodDirName(p))
}
