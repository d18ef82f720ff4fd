// Package layout is the single place that names the lab: namespaces, addresses, interfaces and
// files. Everything else derives from a Layout value so that up, down, the daemon and the tests
// agree on what the lab made (down finds leftovers by these names even after a crash).
package layout

import (
	"fmt"
	"os"
	"path/filepath"
)

// Host is one network namespace of the lab and its address on the LAN bridge.
type Host struct {
	// NS is the network namespace name (ip netns), also the Kubernetes node name for nodes.
	NS string
	// LANIP is the address on the LAN bridge (10.0.10.0/24).
	LANIP string
	// HostVeth is the root-namespace end of the veth pair, enslaved to the bridge. Taking it down
	// cuts the host off the LAN without touching routes inside the namespace.
	HostVeth string
}

// Node is a Kubernetes node made of a network namespace and one kwok process.
type Node struct {
	Host
	// PodCIDR is the node's spec.podCIDR; kwok hands out pod IPs from it and the lab adds the
	// assigned ones inside the namespace.
	PodCIDR string
	// Dedicated nodes carry exactly one pod that needs its own network namespace (the VPN pod):
	// pod-level sysctls apply to the whole namespace, and other pods are kept off by a taint.
	Dedicated bool
}

// Layout is the whole lab topology plus the state directory it writes to.
type Layout struct {
	StateDir string

	Bridge      string
	BridgeCIDR  string // the LAN prefix length
	Workstation string // root namespace address on the bridge: the plugin runs from here

	ControlPlane Host
	Nodes        []Node
	Internet     Host
	Laptop       Host

	// InternetCIDR is the documentation range the "internet" namespace owns. Not 203.0.113.0/24:
	// this machine's own egress proxy lives there, and the workstation's route into the lab
	// (which keeps lab probes inside) would hijack it.
	InternetCIDR string
	InternetDNS  string // authoritative DNS for example.org / example.com
	InternetWeb  string // HTTP responder (example.org)
	AppsPublicIP string // what public DNS says for *.apps.example.com (the VPN-only address)

	ServiceCIDR    string
	ClusterDNSIP   string
	ClusterPodCIDR string // summary route for all pod CIDRs (pushed to VPN clients)

	VPNPool      string // OpenVPN client pool
	VPNServerTun string // tunnel address of the server
	VPNPort      int

	APIServerPort int
	KubeletPort   int
}

// DefaultStateDir is under /run: a tmpfs that a reboot clears together with the namespaces.
const DefaultStateDir = "/run/kubectl-lanaccess-lab"

// Default returns the lab's fixed topology (the seed's addresses where they matter).
func Default() Layout {
	state := os.Getenv("LAB_STATE_DIR")
	if state == "" {
		state = DefaultStateDir
	}
	return Layout{
		StateDir:     state,
		Bridge:       "lanlab0",
		BridgeCIDR:   "24",
		Workstation:  "10.0.10.1",
		ControlPlane: Host{NS: "control-plane", LANIP: "10.0.10.10", HostVeth: "lab-cp"},
		Nodes: []Node{
			{Host: Host{NS: "node-1", LANIP: "10.0.10.11", HostVeth: "lab-n1"}, PodCIDR: "10.244.1.0/24"},
			{Host: Host{NS: "node-2", LANIP: "10.0.10.12", HostVeth: "lab-n2"}, PodCIDR: "10.244.2.0/24"},
			{Host: Host{NS: "node-3", LANIP: "10.0.10.13", HostVeth: "lab-n3"}, PodCIDR: "10.244.3.0/24"},
			{Host: Host{NS: "node-vpn", LANIP: "10.0.10.14", HostVeth: "lab-nvpn"}, PodCIDR: "10.244.4.0/24", Dedicated: true},
		},
		Internet:       Host{NS: "internet", LANIP: "10.0.10.254", HostVeth: "lab-inet"},
		Laptop:         Host{NS: "laptop", LANIP: "10.0.10.50", HostVeth: "lab-laptop"},
		InternetCIDR:   "198.51.100.0/24",
		InternetDNS:    "198.51.100.53",
		InternetWeb:    "198.51.100.10",
		AppsPublicIP:   "198.51.100.80",
		ServiceCIDR:    "10.96.0.0/16",
		ClusterDNSIP:   "10.96.0.10",
		ClusterPodCIDR: "10.244.0.0/16",
		VPNPool:        "10.8.0.0/24",
		VPNServerTun:   "10.8.0.1",
		VPNPort:        1194,
		APIServerPort:  6443,
		KubeletPort:    10250,
	}
}

// Hosts lists every namespace the lab creates, control plane first.
func (l Layout) Hosts() []Host {
	hosts := []Host{l.ControlPlane}
	for _, n := range l.Nodes {
		hosts = append(hosts, n.Host)
	}
	return append(hosts, l.Internet, l.Laptop)
}

// SeedNodes are the seed's three nodes (the dedicated VPN node left out): they carry the LAN
// addresses of the Services.
func (l Layout) SeedNodes() []Node {
	var out []Node
	for _, n := range l.Nodes {
		if !n.Dedicated {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node with that name.
func (l Layout) Node(name string) (Node, error) {
	for _, n := range l.Nodes {
		if n.NS == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("no lab node named %q", name)
}

// NodeByIP returns the node that owns a LAN address.
func (l Layout) NodeByIP(ip string) (Node, error) {
	for _, n := range l.Nodes {
		if n.LANIP == ip {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("no lab node has address %s", ip)
}

// APIServerURL is where the apiserver listens (a lab address: it refuses a loopback advertise
// address).
func (l Layout) APIServerURL() string {
	return fmt.Sprintf("https://%s:%d", l.ControlPlane.LANIP, l.APIServerPort)
}

// Path joins elements under the state directory.
func (l Layout) Path(elem ...string) string {
	return filepath.Join(append([]string{l.StateDir}, elem...)...)
}

// AdminKubeconfig and the functions below name well-known files in the state directory.
func (l Layout) AdminKubeconfig() string { return l.Path("kubeconfig") }
func (l Layout) CAFile() string          { return l.Path("pki", "ca.crt") }
func (l Layout) StateFile() string       { return l.Path("state.json") }
func (l Layout) LogDir() string          { return l.Path("logs") }
func (l Layout) PidDir() string          { return l.Path("pids") }
func (l Layout) PodsDir() string         { return l.Path("pods") }
func (l Layout) LabBinary() string       { return l.Path("bin", "lab") }

// NodeCNIDir is a node's /etc/cni/net.d: the CNI configuration the pod runtime applies to the
// node's new pods, and what a hostNetwork pod of that node sees through a hostPath volume.
func (l Layout) NodeCNIDir(node string) string { return l.Path("nodes", node, "cni", "net.d") }

// NodeHostPath is the lab's per-node copy of a machine directory that pods mount as a hostPath
// volume: /etc/cni/net.d is each node's own (NodeCNIDir). ok is false for any other path.
func (l Layout) NodeHostPath(node, path string) (string, bool) {
	if filepath.Clean(path) == "/etc/cni/net.d" {
		return l.NodeCNIDir(node), true
	}
	return "", false
}

// TestLock serialises test binaries that use the lab. It sits next to the state directory,
// not in it, so that a rebuild of the state does not reset the lock.
func (l Layout) TestLock() string { return l.StateDir + ".lock" }

// ResolvConfDir is where `ip netns exec` looks for a per-namespace resolv.conf.
func ResolvConfDir(ns string) string { return filepath.Join("/etc/netns", ns) }
