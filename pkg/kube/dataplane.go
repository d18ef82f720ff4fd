package kube

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Dataplane is what implements Services on the nodes, as the API shows it: kube-proxy in the
// shapes distributions deploy it (a DaemonSet with a configuration file from a ConfigMap, as
// kubeadm; static pods, as RKE2 and GKE; inside the k3s process, as k3s), and the kube-proxy
// replacements (Cilium's kube-proxy replacement, Calico's eBPF dataplane).
type Dataplane struct {
	KubeProxy []ProxySource
	// Cilium is cilium-config, when Cilium runs (its DaemonSet) or the ConfigMap exists.
	Cilium *CiliumConfig
	// Calico is Calico's dataplane setting, when Calico runs.
	Calico *CalicoDataplane
	// Unread are the reads that failed (RBAC, an API failure), in words: unknown, never absent.
	Unread []string
}

// Proxy modes (kube-proxy --proxy-mode, KubeProxyConfiguration.mode).
const (
	ModeIPTables = "iptables"
	ModeIPVS     = "ipvs"
	ModeNFTables = "nftables"
)

// ProxySource is one kube-proxy deployment and the mode it runs in.
type ProxySource struct {
	// Object is what was read: "DaemonSet kube-system/kube-proxy", "Pod kube-system/kube-proxy-node-1",
	// "Node node-1 (k3s.io/node-args)".
	Object string
	// Kind is "daemonset", "static-pod" or "k3s" (k3s and RKE2's embedded kube-proxy).
	Kind string
	// Nodes the source covers (a static pod or a k3s node: one; a DaemonSet: all).
	Nodes []string
	// Mode as configured ("" = not set: iptables on Linux, cmd/kube-proxy/app/server_linux.go
	// platformApplyDefaults), and where it was read.
	Mode     string
	ModeFrom string
	// StrictARP is KubeProxyConfiguration.ipvs.strictARP (nil when not set: false).
	StrictARP *bool
	// Disabled: k3s runs without kube-proxy (--disable-kube-proxy).
	Disabled bool
	// Unknown says why the mode could not be told ("" when it could).
	Unknown string
	// ConfigMap ("ns/name") and Key locate the configuration file the mode came from
	// (DaemonSet --config); ConfigText is that file as read.
	ConfigMap, Key, ConfigText string
	// Flag locates a --proxy-mode argument: container and index in command+args.
	Flag *FlagRef
}

// FlagRef is where --proxy-mode is written in a container's command line.
type FlagRef struct {
	Container int
	// InCommand: the index is in command, else in args.
	InCommand bool
	// Index is the word holding the value: "--proxy-mode=ipvs", the "ipvs" after a separate
	// "--proxy-mode", or an `sh -c` script that contains the flag.
	Index int
	Word  string
	Value string
	// Separate: the value is a word of its own.
	Separate bool
}

// WordFor is the word at Index with the mode replaced by mode.
func (f FlagRef) WordFor(mode string) string {
	if f.Separate {
		return mode
	}
	if w := strings.Replace(f.Word, "--proxy-mode="+f.Value, "--proxy-mode="+mode, 1); w != f.Word {
		return w
	}
	return strings.Replace(f.Word, "--proxy-mode "+f.Value, "--proxy-mode "+mode, 1)
}

// EffectiveMode is the mode kube-proxy runs in: the configured one, iptables when unset.
func (p ProxySource) EffectiveMode() string {
	if p.Mode == "" {
		return ModeIPTables
	}
	return p.Mode
}

// CiliumConfig is what cilium-config says about Services.
type CiliumConfig struct {
	Object string
	// Present: the ConfigMap was read; Agent: the cilium DaemonSet exists.
	Present, Agent bool
	// KubeProxyReplacement, EnableExternalIPs and EnableNodePort are the keys as written
	// ("" when absent).
	KubeProxyReplacement, EnableExternalIPs, EnableNodePort string
}

// ServesExternalIPs says whether Cilium implements externalIPs, per its configuration:
//   - kube-proxy-replacement "true" forces externalIPs on (pkg/kpr/kpr.go NewKPRConfig in
//     1.16-1.18: `if flags.KubeProxyReplacement { ... cfg.EnableExternalIPs = true }`; from 1.19
//     the flag is gone and the reflector builds ExternalIP frontends for every Service,
//     pkg/loadbalancer/reflectors/k8s.go convertService); "strict" is the pre-1.14 spelling;
//   - otherwise enable-external-ips (default false) and enable-node-port (default false) must
//     both be "true" (NewKPRConfig: `if !cfg.EnableNodePort { cfg.EnableExternalIPs = false }`);
//     "partial" and "probe" (before 1.14) left it to those keys as well.
//
// bpf-lb-external-clusterip is not this switch: it lets clients outside the cluster reach
// ClusterIPs, and says nothing of externalIPs.
//
// Cilium binds no address to a device for a Service: its BPF programs translate on connect and
// at the interfaces, so a node's peers' addresses stay theirs.
func (c CiliumConfig) ServesExternalIPs() bool {
	switch strings.ToLower(c.KubeProxyReplacement) {
	case "true", "strict":
		return true
	}
	return strings.EqualFold(c.EnableExternalIPs, "true") && strings.EqualFold(c.EnableNodePort, "true")
}

// ReplacesKubeProxy says whether Cilium runs as the kube-proxy replacement.
func (c CiliumConfig) ReplacesKubeProxy() bool {
	switch strings.ToLower(c.KubeProxyReplacement) {
	case "true", "strict":
		return true
	}
	return false
}

// CalicoDataplane is Calico's Linux dataplane, where it was read.
type CalicoDataplane struct {
	// Agent names the calico-node DaemonSet.
	Agent string
	// Dataplane is Installation default's spec.calicoNetwork.linuxDataplane as written (one of
	// CalicoIptables, CalicoBPF, CalicoVPP, CalicoNftables; "" when unset, which the operator
	// takes as Iptables, or when there is no Installation).
	Dataplane string
	// BPF: the eBPF dataplane is on (Installation BPF, FelixConfiguration spec.bpfEnabled, or
	// FELIX_BPFENABLED on the agent); From names where it was read.
	BPF  bool
	From string
	// Unknown says why it could not be told.
	Unknown string
	// Unmodelled says that Calico runs a dataplane whose Services this tool does not model
	// (VPP): the verdict cannot rest on kube-proxy alone.
	Unmodelled string
}

// kubeProxyConfig is the part of KubeProxyConfiguration the checks read.
type kubeProxyConfig struct {
	Mode string `json:"mode"`
	IPVS struct {
		StrictARP *bool `json:"strictARP"`
	} `json:"ipvs"`
}

// ParseKubeProxyConfig reads config.conf (KubeProxyConfiguration, YAML or JSON).
func ParseKubeProxyConfig(text string) (mode string, strictARP *bool, err error) {
	var c kubeProxyConfig
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		return "", nil, err
	}
	return strings.ToLower(strings.TrimSpace(c.Mode)), c.IPVS.StrictARP, nil
}

// IsKubeProxyContainer recognises kube-proxy by what the container runs: its command (or the
// `sh -c` script some distributions wrap it in) names the kube-proxy binary.
func IsKubeProxyContainer(c corev1.Container) bool {
	for _, w := range append(append([]string{}, c.Command...), c.Args...) {
		for f := range strings.FieldsSeq(w) {
			if path.Base(f) == "kube-proxy" {
				return true
			}
		}
	}
	return len(c.Command) == 0 && strings.Contains(c.Image, "kube-proxy")
}

// proxyFlags reads --proxy-mode and --config from a kube-proxy container's command line
// (both `--flag=value` and `--flag value`, also inside an `sh -c` script).
func proxyFlags(c corev1.Container, container int) (mode *FlagRef, config string) {
	scan := func(words []string, inCommand bool) {
		for i, w := range words {
			fields := strings.Fields(w)
			for j, f := range fields {
				next := ""
				if j+1 < len(fields) {
					next = fields[j+1]
				} else if len(fields) == 1 && i+1 < len(words) {
					next = words[i+1]
				}
				switch {
				case strings.HasPrefix(f, "--proxy-mode="):
					mode = &FlagRef{Container: container, InCommand: inCommand, Index: i, Word: w, Value: strings.TrimPrefix(f, "--proxy-mode=")}
				case f == "--proxy-mode" && next != "" && len(fields) == 1:
					mode = &FlagRef{Container: container, InCommand: inCommand, Index: i + 1, Word: next, Value: next, Separate: true}
				case f == "--proxy-mode" && next != "":
					mode = &FlagRef{Container: container, InCommand: inCommand, Index: i, Word: w, Value: next}
				case strings.HasPrefix(f, "--config="):
					config = strings.TrimPrefix(f, "--config=")
				case f == "--config" && next != "":
					config = next
				}
			}
		}
	}
	scan(c.Command, true)
	scan(c.Args, false)
	return mode, config
}

// configMapFile resolves a file path inside a container to the ConfigMap key mounted there.
func configMapFile(spec corev1.PodSpec, c corev1.Container, file string) (cm, key string, ok bool) {
	for _, m := range c.VolumeMounts {
		dir := strings.TrimRight(m.MountPath, "/")
		rel, found := strings.CutPrefix(file, dir+"/")
		if !found {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			if m.SubPath != "" {
				return v.ConfigMap.Name, m.SubPath, true
			}
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					return v.ConfigMap.Name, it.Key, true
				}
			}
			if len(v.ConfigMap.Items) == 0 {
				return v.ConfigMap.Name, rel, true
			}
		}
	}
	return "", "", false
}

// daemonSetSource reads a kube-proxy DaemonSet: with --config, the mode is the file's (kube-proxy
// then ignores every flag but logging's: cmd/kube-proxy/app/options.go Complete replaces the
// flag-built configuration with the file's); without it, --proxy-mode.
func daemonSetSource(ds appsv1.DaemonSet, configMaps map[string]corev1.ConfigMap) ProxySource {
	src := ProxySource{Object: fmt.Sprintf("DaemonSet %s/%s", ds.Namespace, ds.Name), Kind: "daemonset"}
	spec := ds.Spec.Template.Spec
	for i, c := range spec.Containers {
		if !IsKubeProxyContainer(c) {
			continue
		}
		flag, config := proxyFlags(c, i)
		if config == "" {
			src.fromFlag(flag)
			return src
		}
		cm, key, ok := configMapFile(spec, c, config)
		if !ok {
			src.Unknown = fmt.Sprintf("--config=%s is not a file of a ConfigMap volume of the DaemonSet, so its mode cannot be read", config)
			return src
		}
		src.ConfigMap, src.Key = ds.Namespace+"/"+cm, key
		obj, found := configMaps[cm]
		if !found {
			src.Unknown = fmt.Sprintf("ConfigMap %s/%s (its --config file) could not be read", ds.Namespace, cm)
			return src
		}
		text, found := obj.Data[key]
		if !found {
			src.Unknown = fmt.Sprintf("ConfigMap %s/%s has no key %q (its --config file)", ds.Namespace, cm, key)
			return src
		}
		mode, strict, err := ParseKubeProxyConfig(text)
		if err != nil {
			src.Unknown = fmt.Sprintf("ConfigMap %s/%s key %s does not parse: %v", ds.Namespace, cm, key, err)
			return src
		}
		src.Mode, src.StrictARP, src.ConfigText = mode, strict, text
		src.ModeFrom = fmt.Sprintf("ConfigMap %s/%s key %s, field mode", ds.Namespace, cm, key)
		if mode == "" {
			src.ModeFrom += " (not set: iptables)"
		}
		return src
	}
	src.Unknown = "no container of the DaemonSet runs kube-proxy"
	return src
}

// configMapSource reads kubeadm's kube-system/kube-proxy ConfigMap (key config.conf, which
// kubeadm's kube-proxy DaemonSet mounts as its --config) when no DaemonSet running kube-proxy
// was seen: kube-proxy then runs where the API does not show it (a host service, the lab's
// own), and this configuration is the only account of its mode.
func configMapSource(text string) ProxySource {
	src := ProxySource{Object: "ConfigMap kube-system/kube-proxy", Kind: "configmap", ConfigMap: "kube-system/kube-proxy", Key: KubeProxyConfigKey}
	mode, strict, err := ParseKubeProxyConfig(text)
	if err != nil {
		src.Unknown = fmt.Sprintf("ConfigMap kube-system/kube-proxy key %s does not parse: %v", KubeProxyConfigKey, err)
		return src
	}
	src.Mode, src.StrictARP, src.ConfigText = mode, strict, text
	src.ModeFrom = "ConfigMap kube-system/kube-proxy key config.conf, field mode (no DaemonSet seen running kube-proxy)"
	if mode == "" {
		src.ModeFrom += " (not set: iptables)"
	}
	return src
}

// KubeProxyConfigKey is the key kubeadm writes kube-proxy's configuration file under.
const KubeProxyConfigKey = "config.conf"

// SetKubeProxyMode returns the configuration file text with its mode set to mode, the rest
// kept (keys re-ordered, comments dropped: the file is YAML read into a map).
func SetKubeProxyMode(text, mode string) (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		return "", err
	}
	if m == nil {
		m = map[string]any{}
	}
	m["mode"] = mode
	out, err := yaml.Marshal(m)
	return string(out), err
}

func (p *ProxySource) fromFlag(flag *FlagRef) {
	if flag == nil {
		p.ModeFrom = "no --proxy-mode and no --config: kube-proxy's default, iptables"
		return
	}
	p.Flag = flag
	p.Mode = strings.ToLower(flag.Value)
	p.ModeFrom = "the container's --proxy-mode=" + flag.Value
}

// staticPodSource reads a kube-proxy static pod (RKE2 writes kube-system/kube-proxy-NODE with
// the flags on its command line, rancher/rke2 pkg/staticpod; GKE does the same).
func staticPodSource(p corev1.Pod) (ProxySource, bool) {
	for i, c := range p.Spec.Containers {
		if !IsKubeProxyContainer(c) {
			continue
		}
		src := ProxySource{Object: fmt.Sprintf("Pod %s/%s", p.Namespace, p.Name), Kind: "static-pod"}
		if p.Spec.NodeName != "" {
			src.Nodes = []string{p.Spec.NodeName}
		}
		flag, config := proxyFlags(c, i)
		if config != "" {
			src.Unknown = fmt.Sprintf("--config=%s is a file on the node, not in the API: its mode cannot be read", config)
			return src, true
		}
		src.fromFlag(flag)
		return src, true
	}
	return ProxySource{}, false
}

// k3sSource reads the kube-proxy that k3s (and RKE2's agent) runs inside its own process: k3s
// records its arguments, config file included, in the node annotation k3s.io/node-args (k3s
// pkg/nodeconfig, `--flag=value` split into two items, secrets blanked) and runs kube-proxy
// with proxy-mode iptables unless --kube-proxy-arg says otherwise (k3s
// pkg/daemons/agent/agent_linux.go kubeProxyArgs); --disable-kube-proxy turns it off.
func k3sSource(n corev1.Node) (ProxySource, bool) {
	for _, key := range []string{"k3s.io/node-args", "rke2.io/node-args"} {
		raw, ok := n.Annotations[key]
		if !ok {
			continue
		}
		src := ProxySource{Object: fmt.Sprintf("Node %s (%s)", n.Name, key), Kind: "k3s", Nodes: []string{n.Name}}
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			src.Unknown = fmt.Sprintf("annotation %s does not parse: %v", key, err)
			return src, true
		}
		src.ModeFrom = "k3s's default, iptables (no --kube-proxy-arg proxy-mode)"
		for i, a := range args {
			switch {
			case a == "--disable-kube-proxy" && (i+1 >= len(args) || args[i+1] != "false"):
				src.Disabled = true
			case (a == "--kube-proxy-arg" || a == "--kube-proxy-args") && i+1 < len(args):
				k, v, _ := strings.Cut(strings.TrimPrefix(args[i+1], "--"), "=")
				if k == "proxy-mode" {
					src.Mode = strings.ToLower(v)
					src.ModeFrom = "--kube-proxy-arg=proxy-mode=" + v
				}
			}
		}
		return src, true
	}
	return ProxySource{}, false
}

// KnownModes are the modes kube-proxy accepts on Linux.
var KnownModes = []string{ModeIPTables, ModeIPVS, ModeNFTables}

// KnownMode reports whether mode is one kube-proxy runs on Linux ("" is iptables).
func KnownMode(mode string) bool { return mode == "" || slices.Contains(KnownModes, mode) }
