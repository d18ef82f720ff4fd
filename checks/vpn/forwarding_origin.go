package vpn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Where a pod's ip_forward comes from. A pod's network namespace is created for its sandbox
// and starts from the IPv4 settings of the kernel's initial namespace (the node's) when
// net.core.devconf_inherit_init_net is 0 or 1, from the creating process's namespace when it
// is 3, and from the compiled defaults (forwarding off) when it is 2 (Linux net/ipv4/devinet.c,
// devinet_init_net). The CNI plugins the runtime then runs may write their own value: Calico's
// writes 1 when container_settings.allow_ip_forwarding is true and 0 otherwise (calico
// cni-plugin/pkg/dataplane/linux/dataplane_linux.go, configureContainerSysctls; the operator
// renders the setting from Installation spec.calicoNetwork.containerIPForwarding, tigera/operator
// pkg/render/node.go), and the tuning plugin writes any net.* sysctl it is given
// (containernetworking/plugins plugins/meta/tuning). The other containernetworking plugins
// write only the node's ip_forward (bridge and ptp, for their gateway), and flannel delegates
// to bridge. The value then lasts as long as the sandbox: a container restart keeps it, a new
// pod starts over.

// origin is what a new pod on the pod's node starts with, and why.
type origin struct {
	// NewPod is "0", "1", or "" when it cannot be told.
	NewPod string
	// ByCNI is set when a CNI plugin writes the value (rather than inheritance).
	ByCNI bool
	// How is the chain, in the order the kernel and the plugins apply it.
	How []string
	// Unknown says what could not be read or is not modelled.
	Unknown []string
	// Calico is set when Calico's plugin is in the chain; CalicoAllows its setting there.
	Calico       bool
	CalicoAllows bool
	// File is the node's CNI configuration in use ("" when not read).
	File string
	// Writer is the type of the plugin whose write a new pod keeps ("" when none writes).
	Writer string
}

func (o origin) sentence() string { return strings.Join(o.How, "; then ") }

// addEvidence notes what is known of the origin in ev (nothing for what is not).
func (o origin) addEvidence(ev map[string]any) {
	if o.NewPod != "" {
		ev["newPodStartsWith"] = o.NewPod
	}
	if len(o.How) > 0 {
		ev["origin"] = o.How
	}
	if len(o.Unknown) > 0 {
		ev["originUnknown"] = o.Unknown
	}
}

// transparentPlugins write no ip_forward in the pod's namespace (containernetworking/plugins:
// only bridge and ptp write ip_forward, the node's, and tuning writes what it is given).
var transparentPlugins = []string{"bridge", "ptp", "portmap", "bandwidth", "firewall", "loopback", "host-local",
	"static", "dhcp", "macvlan", "ipvlan", "vlan", "host-device", "dummy", "tap", "sbr", "vrf"}

func originOf(run *facts.Run, p *facts.Pod) origin {
	var o origin
	inherited := inheritedValue(p.Node, &o)
	chain, file := cniChain(run, p.Node, &o)
	o.File = file
	value := inherited
	for _, pl := range chain {
		if v, how, ok := pluginWrites(pl, file, &o); ok {
			value, o.ByCNI, o.Writer = v, true, pl.Type
			o.How = append(o.How, how)
		}
	}
	o.NewPod = value
	return o
}

// inheritedValue is what a new pod namespace copies from the kernel.
func inheritedValue(n facts.NodeRead, o *origin) string {
	if n.Err != nil {
		o.Unknown = append(o.Unknown, "node "+n.Node+" was not read: "+n.Err.Error())
		return ""
	}
	switch n.Inherit {
	case "2":
		o.How = append(o.How, "a new pod network namespace starts from the kernel's defaults, forwarding off (net.core.devconf_inherit_init_net=2)")
		return "0"
	case "0", "1":
		o.How = append(o.How, fmt.Sprintf("a new pod network namespace copies node %s's IPv4 settings, ip_forward=%s (net.core.devconf_inherit_init_net=%s)", n.Node, n.Forward, n.Inherit))
		return n.Forward
	case "3":
		o.How = append(o.How, fmt.Sprintf("a new pod network namespace copies the container runtime's namespace, normally node %s's, ip_forward=%s (net.core.devconf_inherit_init_net=3)", n.Node, n.Forward))
		return n.Forward
	}
	o.Unknown = append(o.Unknown, fmt.Sprintf("node %s reads ip_forward=%s through %s, but that is not the kernel's initial network namespace (net.core.devconf_inherit_init_net is not there: a node in a container, or a kernel before 5.1), and a new pod namespace copies the initial one, which its pods cannot see", n.Node, n.Forward, n.Via))
	return ""
}

// cniChain is the plugin chain new pods on the node get: the node's first configuration file
// (the one the runtime loads), else Calico's cluster configuration.
func cniChain(run *facts.Run, n facts.NodeRead, o *origin) ([]facts.CNIPlugin, string) {
	if len(n.Files) > 0 {
		f := n.Files[0]
		if f.Err != nil {
			o.Unknown = append(o.Unknown, fmt.Sprintf("%s on node %s: %v", f.Path, n.Node, f.Err))
			return nil, f.Path
		}
		return f.Config.Plugins, fmt.Sprintf("node %s's %s", n.Node, f.Path)
	}
	switch {
	case n.Err == nil && n.ConfDir == "":
		o.Unknown = append(o.Unknown, fmt.Sprintf("node %s's CNI configuration was not read: no container of the pod read (%s) mounts %s", n.Node, n.Via, "/etc/cni/net.d"))
	case n.Err == nil:
		o.Unknown = append(o.Unknown, fmt.Sprintf("node %s's CNI configuration directory (%s in %s) holds no configuration", n.Node, n.ConfDir, n.Via))
	}
	if cal := run.CNI.Calico; cal.ConfigMap != "" && cal.ConfigErr == nil {
		return cal.Config.Plugins, "the ConfigMap " + cal.ConfigMap
	}
	if run.CNI.DaemonSetsErr != nil {
		o.Unknown = append(o.Unknown, run.CNI.DaemonSetsErr.Error())
	}
	return nil, ""
}

// pluginWrites tells whether a plugin writes the pod's ip_forward, and what.
func pluginWrites(pl facts.CNIPlugin, file string, o *origin) (string, string, bool) {
	switch {
	case pl.Type == "calico":
		o.Calico, o.CalicoAllows = true, pl.AllowIPForwarding != nil && *pl.AllowIPForwarding
		if o.CalicoAllows {
			return "1", "Calico's CNI plugin writes 1 (container_settings.allow_ip_forwarding is true in " + file + ")", true
		}
		return "0", "Calico's CNI plugin writes 0 (container_settings.allow_ip_forwarding is not true in " + file + ")", true
	case pl.Type == "tuning":
		return tuningWrites(pl, file, o)
	case pl.Type == "flannel" && (pl.DelegateType == "" || slices.Contains(transparentPlugins, pl.DelegateType)):
	case !slices.Contains(transparentPlugins, pl.Type):
		o.Unknown = append(o.Unknown, fmt.Sprintf("the %q plugin in %s is not modelled: if it writes ip_forward, new pods get its value", pl.Type, file))
	}
	return "", "", false
}

// tuningWrites is what the tuning plugin writes into ip_forward. It turns each key of its sysctl
// map into a path by replacing "." with "/", so both spellings name the same file, and writes
// them in Go's map order, which is random (containernetworking/plugins v1.10.0
// plugins/meta/tuning/tuning.go, cmdAdd and getSysctlFilename; its write is proven with the real
// plugin in the lab, lab/e2e/vpn_tuning_test.go).
func tuningWrites(pl facts.CNIPlugin, file string, o *origin) (string, string, bool) {
	dotted, hasDotted := pl.Sysctl["net.ipv4.ip_forward"]
	slashed, hasSlashed := pl.Sysctl["net/ipv4/ip_forward"]
	dotted, slashed = strings.TrimSpace(dotted), strings.TrimSpace(slashed)
	switch {
	case hasDotted && hasSlashed && dotted != slashed:
		o.Unknown = append(o.Unknown, fmt.Sprintf("the tuning plugin in %s sets ip_forward twice (net.ipv4.ip_forward %q, net/ipv4/ip_forward %q): it writes both, in random order, so a new pod gets either", file, dotted, slashed))
		return "", fmt.Sprintf("the tuning plugin writes %s or %s (sysctl in %s)", dotted, slashed, file), true
	case hasDotted:
		return dotted, fmt.Sprintf("the tuning plugin writes %s (sysctl in %s)", dotted, file), true
	case hasSlashed:
		return slashed, fmt.Sprintf("the tuning plugin writes %s (sysctl in %s)", slashed, file), true
	}
	return "", "", false
}

// calicoFix is cniFix when Calico's plugin has the last word on a new pod's value: with a writer
// after it in the chain (tuning), Calico's setting changes nothing.
func calicoFix(run *facts.Run, p *facts.Pod, o origin) (string, bool) {
	if o.Writer != "calico" {
		return "", false
	}
	return cniFix(run, p)
}

// cniFix is the CNI-level fix: Calico's setting, once for the cluster, with no privilege.
// ok is false when the cluster's Calico configuration was not found.
func cniFix(run *facts.Run, p *facts.Pod) (string, bool) {
	cal := run.CNI.Calico
	restart := "# new pods get the value: replace the VPN pods (a running pod keeps the one it started with)\n" + replacePods(p)
	switch {
	case cal.Installation || strings.HasPrefix(cal.ConfigMap, "calico-system/"):
		patch := remedy.MergePatch("", "installation.operator.tigera.io", "default",
			map[string]any{"spec": map[string]any{"calicoNetwork": map[string]any{"containerIPForwarding": "Enabled"}}})
		return "# Calico's operator renders allow_ip_forwarding into every node's CNI configuration and restarts calico-node\n" + patch + "\n" + restart, true
	case cal.ConfigMap != "" && cal.Template != "":
		tmpl, err := facts.CalicoTemplateAllowingForwarding(cal.Template)
		if err != nil {
			return "", false
		}
		ns, name, _ := strings.Cut(cal.ConfigMap, "/")
		ds := calicoDaemonSet(run)
		// A VPN pod replaced before calico-node has restarted on its node gets the old file's
		// 0: wait for the rollout (the lab's test of this fix raced without it).
		return "# Calico's install-cni writes this template to every node when calico-node starts\n" +
			remedy.MergePatch(ns, "configmap", name, map[string]any{"data": map[string]string{cal.Key: tmpl}}) + "\n" +
			remedy.Kubectl(ds.Namespace, "rollout", "restart", "daemonset/"+ds.Name) + "\n" +
			remedy.Kubectl(ds.Namespace, "rollout", "status", "daemonset/"+ds.Name) + "\n" + restart, true
	}
	return "", false
}

// calicoDaemonSet is the Calico DaemonSet (kube-system/calico-node when none was listed).
func calicoDaemonSet(run *facts.Run) facts.CNIDaemonSet {
	for _, d := range run.CNI.DaemonSets {
		if d.Plugin == "calico" {
			return d
		}
	}
	return facts.CNIDaemonSet{Namespace: "kube-system", Name: "calico-node", Plugin: "calico"}
}

// replacePods starts a new pod in place of p: a rollout of its workload, else deleting it
// (its controller creates another; a bare pod must be created again).
func replacePods(p *facts.Pod) string {
	switch w := p.Owner; w.Kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return remedy.Kubectl(w.Namespace, "rollout", "restart", strings.ToLower(w.Kind)+"/"+w.Name)
	case "":
		return remedy.Kubectl(p.Ref.Namespace, "delete", "pod", p.Ref.Name) + "   # a bare pod: create it again"
	}
	return remedy.Kubectl(p.Ref.Namespace, "delete", "pod", p.Ref.Name) + "   # " + p.Owner.String() + " creates another"
}

// calicoDrift says when the node's CNI file and Calico's cluster setting disagree: the next
// calico-node start rewrites the node's file from the cluster's.
func calicoDrift(run *facts.Run, o origin) (string, bool) {
	cal := run.CNI.Calico
	if !o.Calico || o.File == "" || strings.HasPrefix(o.File, "the ConfigMap") {
		return "", false
	}
	var clusterAllows bool
	var from string
	switch {
	case cal.Installation:
		clusterAllows, from = cal.ContainerIPForwarding == "Enabled", fmt.Sprintf("Installation default says containerIPForwarding %q", cal.ContainerIPForwarding)
	case cal.ConfigMap != "" && cal.ConfigErr == nil:
		clusterAllows, from = calicoAllows(cal.Config), "the ConfigMap "+cal.ConfigMap
	default:
		return "", false
	}
	if clusterAllows == o.CalicoAllows {
		return "", false
	}
	return fmt.Sprintf("%s, but %s has allow_ip_forwarding %t: calico-node has not rewritten it yet (it does when it starts)", from, o.File, o.CalicoAllows), clusterAllows
}

func calicoAllows(c facts.CNIConfig) bool {
	for _, pl := range c.Plugins {
		if pl.Type == "calico" {
			return pl.AllowIPForwarding != nil && *pl.AllowIPForwarding
		}
	}
	return false
}
