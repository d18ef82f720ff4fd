// Package facts gathers what vpn-trace judges. One Run holds the facts of one invocation and
// one Pod those of each traced replica, as typed values; a Gatherer reads them through
// injected seams (the API, exec into pods, the kubelet's configuration through the node proxy,
// this machine's sockets). Each fact is read at most once per run, whichever check asks first;
// the checks in package vpn only judge what they are handed.
package facts

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// Options are vpn-trace's settings, parsed and validated before any check runs.
type Options struct {
	// Selector picks the VPN pods (nil: pods running an OpenVPN image or container).
	Selector labels.Selector
	// Namespace limits the search ("" = all namespaces).
	Namespace string
	// Public is the last hop of the ladders, host:port ("" = not asked).
	Public string
	// FromClient also walks the ladder from this machine through the tunnel.
	FromClient bool
	// HopTimeout bounds each hop (default 2 s).
	HopTimeout time.Duration
	// ExecTimeout bounds each command run in a VPN pod or on its node (--exec-timeout;
	// default 15 s).
	ExecTimeout time.Duration
	// ClusterDNS and PodTarget name the ladder's VIP and pod hops when discovery cannot
	// (zero values: discovered). PodTarget's port 0 means "ping it".
	ClusterDNS netip.Addr
	PodTarget  netip.AddrPort
	// ProveFixes asks the API server, with a dry-run create, whether a pod carrying each
	// forwarding fix would be admitted (--prove-fixes).
	ProveFixes bool
}

// Need names facts a check judges; Gather reads them (and what they depend on) once.
type Need uint32

const (
	// NeedForwarding is net.ipv4.ip_forward in each pod.
	NeedForwarding Need = 1 << iota
	// NeedDurability is what the spec and the cluster say about keeping it (Pod.Durability).
	NeedDurability
	// NeedTunnel is the pod's side of the tunnel (Pod.Tunnel).
	NeedTunnel
	// NeedNAT is the pod's nat table for the pool and the NetworkPolicies (Pod.NAT, Run.Policies).
	NeedNAT
	// NeedPodLadder is the hop ladder walked from inside each pod (Pod.Ladder).
	NeedPodLadder
	// NeedClientLadder is the ladder walked from this machine (Run.Client).
	NeedClientLadder
	// NeedOrigin is where a new pod's ip_forward comes from: the node and the CNI (Pod.Node,
	// Run.CNI).
	NeedOrigin
	// NeedTargets are the ladders' addresses and the cluster's ranges (Run.Targets).
	NeedTargets
)

// Has reports whether n includes all of m.
func (n Need) Has(m Need) bool { return n&m == m }

// Run is one invocation's facts. Fields of needs that were not asked for stay zero.
type Run struct {
	// Pods are the running replicas, in name order; NotRunning those that are not.
	Pods       []*Pod
	NotRunning []corev1.Pod
	// How says how the pods were chosen ("selector app=openvpn in namespace vpn").
	How string
	// Targets are the ladders' addresses (NeedPodLadder, NeedClientLadder).
	Targets    Targets
	TargetsErr error
	// Client is the ladder from this machine (NeedClientLadder).
	Client    ClientLadder
	ClientErr error
	// Policies are the cluster's NetworkPolicies (NeedNAT).
	Policies    []networkingv1.NetworkPolicy
	PoliciesErr error
	// CNI is the cluster's pod network (NeedOrigin).
	CNI CNI
	// CNIPolicies are the CNIs' own policy kinds, as read (NeedNAT).
	CNIPolicies []PolicyKind
	// TargetNode is the node of the ladder's pod, read like Pod.Node (NeedNAT): its routes
	// tell whether the cluster routes the client pool back.
	TargetNode NodeRead
}

// PolicyKind is one kind of a CNI's own network policy and what listing it gave.
type PolicyKind struct {
	// Kind names it ("Calico NetworkPolicy (crd.projectcalico.org/v1)").
	Kind string
	// Installed is false when the API has no such resource.
	Installed bool
	Items     []unstructured.Unstructured
	Err       error
}

// Pod is one traced replica and what was learnt about it.
type Pod struct {
	Pod       *corev1.Pod
	Ref       podexec.PodRef
	Container string
	// Owner is the workload whose pod template a fix goes into (NeedDurability, NeedNAT).
	Owner Workload
	// NamespaceLabels are the labels of the pod's namespace, with kubernetes.io/metadata.name
	// (NeedDurability, NeedNAT).
	NamespaceLabels map[string]string

	Forwarding    Forwarding
	ForwardingErr error
	Durability    Durability
	Tunnel        Tunnel
	TunnelErr     error
	NAT           NAT
	NATErr        error
	Ladder        Ladder
	LadderErr     error
	// Node is the pod's node as read through a hostNetwork pod there (NeedOrigin).
	Node NodeRead
}

// Object names the pod in findings ("Pod vpn/openvpn-x").
func (p *Pod) Object() string { return "Pod " + p.Ref.String() }

// Image is the image of the traced container.
func (p *Pod) Image() string {
	for _, c := range p.Pod.Spec.Containers {
		if c.Name == p.Container {
			return c.Image
		}
	}
	return ""
}

// Workload is what owns a VPN pod: the object whose pod template the fix goes into.
type Workload struct {
	Kind      string // Deployment, StatefulSet, DaemonSet, ReplicaSet; "" for a bare pod
	Name      string
	Namespace string
	// Meta is the owner's metadata when it was read (a Deployment's labels and annotations).
	Meta *metav1.ObjectMeta
}

func (w Workload) String() string {
	if w.Kind == "" {
		return "Pod " + w.Namespace + "/" + w.Name
	}
	return w.Kind + " " + w.Namespace + "/" + w.Name
}

// Forwarding is ip_forward as read in one pod, and how it was read.
type Forwarding struct {
	Value  string // "0" or "1"
	Method string
}

// Durability are the inputs of the durability judgement: what the spec, the ConfigMaps it
// mounts, the namespace and the node's kubelet say about keeping ip_forward=1.
type Durability struct {
	// Scripts are, per volume name, the text of the ConfigMaps the pod mounts (charts often
	// start OpenVPN through such a script). Unreadable ConfigMaps are absent.
	Scripts map[string]string
	// PodSecurity is the namespace's enforce level ("" = none, which admits everything).
	PodSecurity string
	// Allowlist is the node kubelet's allowedUnsafeSysctls; AllowlistErr why it is unknown.
	Allowlist    []string
	AllowlistErr error
	// SysctlForbidden are the messages of the namespace's SysctlForbidden events.
	SysctlForbidden []string
	// Admissions are the API server's answers to a dry-run pod carrying each fix variant
	// (by Variant*); NotProven says why there are none.
	Admissions map[string]Admission
	NotProven  string
}

// TunIface is a tun or tap interface with its IPv4 addresses.
type TunIface struct {
	Name  string
	Kind  string // "tun" or "tap"
	Addrs []linuxnet.IfAddr
}

// Tunnel is the pod's side of the tunnel.
type Tunnel struct {
	Tunnels []TunIface
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

// NAT is what the pod's nat table does to the pool.
type NAT struct {
	Pool netip.Prefix
	// Read lists the tools whose output was read (iptables-save variants).
	Read []string
	// Rules rewrite the pool's source (MASQUERADE, SNAT).
	Rules []linuxnet.NATRule
	// Unknown says why the nat table could not be read ("" when it was).
	Unknown string
}

// Masqueraded reports whether a rule rewrites the pool's source.
func (n NAT) Masqueraded() bool { return n.Unknown == "" && len(n.Rules) > 0 }

// Targets are the addresses both ladders walk to, chosen once per run.
type Targets struct {
	// PodIP is a pod of another workload; PodIsDNS when it is a cluster DNS pod (then asked a
	// DNS question), else PodPort is a TCP port it declares (0: none, ping it). Pod is that
	// pod when it was read (nil for --pod-target), PodNode its node, PodNamespaceLabels its
	// namespace's labels.
	Pod                *corev1.Pod
	PodNode            string
	PodNamespaceLabels map[string]string
	PodIP              netip.Addr
	PodPort            uint16
	PodIsDNS           bool
	PodDesc            string
	// VIP is the cluster DNS Service's ClusterIP.
	VIP     netip.Addr
	VIPDesc string
	// Name is asked of the VIP and of the resolvers: kubernetes.default.svc.<domain>.
	Name string
	// Public is host:port (port 443 when none was given); "" when --public was not set.
	Public string
	// PodCIDRs are the nodes' pod ranges and ServiceCIDRs the Service ranges (ServiceCIDR
	// objects): what clients must route into the tunnel. Empty when not readable (see Notes).
	PodCIDRs     []netip.Prefix
	ServiceCIDRs []netip.Prefix
	Notes        []string
}

// ClientLadder is the ladder from this machine; Skip says why it was not walked.
type ClientLadder struct {
	Ladder Ladder
	Skip   string
	Local  netip.Addr
	// Routes is how this machine routes the ladder's targets.
	Routes ClientRoutes
}

// ClientRoutes is this machine's routing of the ladder's addresses: its routing table (Linux)
// and, per address, the source address the kernel picks, which is in the client pool when the
// packets go into the tunnel.
type ClientRoutes struct {
	Table    []linuxnet.Route
	TableErr error
	To       []RouteTo
}

// RouteTo is how this machine sends packets to one address.
type RouteTo struct {
	Dest netip.Addr
	// Route is the routing table's longest match (nil when the table was not read).
	Route *linuxnet.Route
	// Source is the address the kernel picks; ThroughTunnel when it is in the client pool.
	// NoRoute: the kernel has no route to it at all (network unreachable).
	Source        netip.Addr
	SourceErr     error
	ThroughTunnel bool
	NoRoute       bool
}

// For returns how dest is routed, nil when it was not looked at.
func (c ClientRoutes) For(dest netip.Addr) *RouteTo {
	for i := range c.To {
		if c.To[i].Dest == dest {
			return &c.To[i]
		}
	}
	return nil
}

// Hop returns the walked hop name, nil when the ladder was not walked or has no such hop.
func (c ClientLadder) Hop(name string) *HopResult {
	if c.Skip != "" {
		return nil
	}
	return c.Ladder.Hop(name)
}

// Walked reports whether the ladder was walked.
func (c ClientLadder) Walked() bool { return c.Skip == "" }

// NodeRead is what the VPN pod's node says about the ip_forward a new pod starts with, read
// through a hostNetwork pod on it (whose network namespace is the node's).
type NodeRead struct {
	Node string
	// Via names the pod and container read ("pod kube-system/calico-node-x, container
	// calico-node"); "" when no pod could be read.
	Via string
	// Forward is the node's net.ipv4.ip_forward ("" unknown).
	Forward string
	// Inherit is net.core.devconf_inherit_init_net ("" when the file is absent: the reader is
	// not in the kernel's initial network namespace, or the kernel predates the setting).
	Inherit string
	// KernelVersion is the node's, from its status.
	KernelVersion string
	// ConfDir is where the node's CNI configuration directory was read, inside the container
	// ("" when no container there mounts it); Files its files in name order: the container
	// runtime uses the first (containerd's go-cni, loadFromConfDir, sorts them and loads one).
	ConfDir string
	Files   []CNIFile
	// Routes is the node's main routing table (/proc/net/route); IPRoutes are `ip -4 route`'s
	// lines where the reading container has ip (they name the routing protocol: bird is BGP).
	Routes   []linuxnet.Route
	IPRoutes []string
	// Err says why the node could not be read at all.
	Err error
	// Notes are partial failures (a candidate pod that could not be exec'ed into).
	Notes []string
}

// CNIFile is one file of a node's CNI configuration directory.
type CNIFile struct {
	Path   string
	Config CNIConfig
	Err    error
}

// CNI is the cluster's pod network as its DaemonSets and configuration objects say.
type CNI struct {
	// DaemonSets are those whose pods mount the node's CNI configuration directory.
	DaemonSets    []CNIDaemonSet
	DaemonSetsErr error
	Calico        CalicoSettings
}

// Plugin is the first recognised CNI DaemonSet's plugin ("calico", "cilium", "flannel"), ""
// when none is recognised.
func (c CNI) Plugin() string {
	for _, d := range c.DaemonSets {
		if d.Plugin != "" {
			return d.Plugin
		}
	}
	return ""
}

// CNIDaemonSet is a DaemonSet that installs the nodes' CNI configuration.
type CNIDaemonSet struct {
	Namespace, Name string
	// Plugin is recognised from the name or image ("" when not).
	Plugin string
}

// CalicoSettings are Calico's cluster-wide CNI settings: the operator's Installation, or the
// manifest install's ConfigMap template.
type CalicoSettings struct {
	// Installation is set when the operator's Installation "default" exists;
	// ContainerIPForwarding is its spec.calicoNetwork.containerIPForwarding ("" = unset, which
	// the operator renders as allow_ip_forwarding false).
	Installation          bool
	ContainerIPForwarding string
	InstallationErr       error
	// ConfigMap ("namespace/name") and Key hold the CNI configuration the nodes get: the
	// operator's rendered calico-system/cni-config, or the manifest's kube-system/calico-config
	// template; Template is its text, Config what it says.
	ConfigMap, Key string
	Template       string
	Config         CNIConfig
	ConfigErr      error
}
