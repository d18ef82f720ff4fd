// Package kubeproxy runs the real kube-proxy (k8s.io/kubernetes/cmd/kube-proxy, built by
// lab/build.sh with the control plane, same module and version) once per node namespace, as a
// node's kube-proxy DaemonSet pod would run it: its own KubeProxyConfiguration file (the mode,
// hostnameOverride node-N, the cluster's pod CIDR), the kube-proxy identity of the lab PKI, and
// metrics and healthz on the node's loopback. This package only writes the configuration, says
// how to start the process and reads its sync metrics; labctl starts and stops it like every
// other lab daemon.
//
// IPVS mode cannot run here (no ip_vs in this kernel); the lab's IPVS variant is an emulation
// of its address binding (faults.SetIPVSMode) on top of the iptables proxier.
package kubeproxy

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// Mode is kube-proxy's proxy mode (KubeProxyConfiguration.mode).
type Mode string

// The modes that run in the lab. IPVS needs the ip_vs module, which this kernel lacks.
const (
	IPTables Mode = "iptables"
	NFTables Mode = "nftables"
)

// Default is the mode `lab up` starts: kube-proxy's own default on Linux.
const Default = IPTables

// ParseMode accepts the modes the lab can run.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case IPTables, NFTables:
		return m, nil
	case "ipvs":
		return "", fmt.Errorf("kube-proxy mode ipvs cannot run in the lab (this kernel has no ip_vs): use the IPVS emulation (lab fault ipvs on)")
	default:
		return "", fmt.Errorf("unknown kube-proxy mode %q (iptables or nftables)", s)
	}
}

// MetricsAddr and HealthzAddr are on each node namespace's loopback: nothing outside the node
// needs them, and every node namespace has its own 127.0.0.1.
const (
	MetricsAddr = "127.0.0.1:10249"
	HealthzAddr = "127.0.0.1:10256"
)

// ProcName is the process name (pidfile, log) of a node's kube-proxy.
func ProcName(node string) string { return "kube-proxy-" + node }

// ConfigPath is a node's KubeProxyConfiguration file.
func ConfigPath(l layout.Layout, node string) string {
	return l.Path("kube-proxy", node+".yaml")
}

// Match is what the command line of a node's running kube-proxy contains (procs.Manager.Pid).
func Match(l layout.Layout, node string) string { return "--config=" + ConfigPath(l, node) }

// Config renders a node's KubeProxyConfiguration (kube-proxy config v1alpha1,
// staging/src/k8s.io/kube-proxy/config/v1alpha1/types.go).
//
// clusterCIDR is what a kubeadm node gets: kubeadm copies networking.podSubnet into it
// (cmd/kubeadm/app/componentconfigs/kubeproxy.go, Default); k3s passes --cluster-cidr too, with
// --proxy-mode=iptables, --hostname-override and --conntrack-max-per-core=0 (k3s
// pkg/daemons/agent/agent_linux.go, kubeProxyArgs). With
// it, kube-proxy tells pod traffic from the rest (detectLocalMode ClusterCIDR): ClusterIP
// traffic from outside the pod range is masqueraded, and under externalTrafficPolicy Local pod
// traffic to an external IP still goes to any endpoint. masqueradeAll stays false, its
// default on kubeadm and k3s: kube-proxy masquerades what its rules mark (KUBE-MARK-MASQ) only.
//
// conntrack.maxPerCore 0 leaves nf_conntrack_max alone: a non-initial network namespace cannot
// set it (kube-proxy would exit). metrics and healthz bind the node's loopback.
func Config(l layout.Layout, node string, mode Mode, kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: %s
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: 0.0.0.0
clusterCIDR: %s
metricsBindAddress: %s
healthzBindAddress: %s
conntrack:
  maxPerCore: 0
`, mode, kubeconfig, node, l.ClusterPodCIDR, MetricsAddr, HealthzAddr)
}

// WriteConfig writes a node's configuration file.
func WriteConfig(l layout.Layout, node string, mode Mode, kubeconfig string) error {
	return WriteConfigGates(l, node, mode, kubeconfig, nil)
}

// WriteConfigGates writes a node's configuration file with featureGates (KubeProxyConfiguration
// featureGates, a map of gate names to booleans; none when gates is empty).
func WriteConfigGates(l layout.Layout, node string, mode Mode, kubeconfig string, gates map[string]bool) error {
	path := ConfigPath(l, node)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(Config(l, node, mode, kubeconfig))
	if len(gates) > 0 {
		names := make([]string, 0, len(gates))
		for n := range gates {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteString("featureGates:\n")
		for _, n := range names {
			fmt.Fprintf(&b, "  %s: %t\n", n, gates[n])
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// ReadMode is the mode a node's configuration file says.
func ReadMode(l layout.Layout, node string) (Mode, error) {
	b, err := os.ReadFile(ConfigPath(l, node))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mode: "); ok {
			return ParseMode(strings.TrimSpace(v))
		}
	}
	return "", fmt.Errorf("%s names no mode", ConfigPath(l, node))
}

// Spec is how labctl starts a node's kube-proxy: inside the node's namespace, from its file,
// under `lab supervise` (procs.Supervise), which restarts it as the kubelet restarts the
// kube-proxy DaemonSet's container: kube-proxy exits when its node's addresses change
// (pkg/proxy/node.go), e.g. when the dual-stack fault adds IPv6 InternalIPs.
func Spec(l layout.Layout, bin, node string) procs.Spec {
	return procs.Spec{Name: ProcName(node), NS: node, Dir: l.StateDir,
		Argv: []string{l.LabBinary(), "supervise", "--", bin, "--config=" + ConfigPath(l, node), "--v=1"}}
}

// Sync is what kube-proxy's metrics say about its rule syncs, per IP family: when a sync was
// last queued (a Service or EndpointSlice event, pkg/proxy/iptables/proxier.go Sync) and when
// one last succeeded (the end of syncProxyRules). Both are Unix times in seconds.
type Sync struct {
	Queued, Synced map[string]float64
}

// Pending names the IP families with a queued change not yet synced; empty when none, and
// "no sync yet" when kube-proxy has not synced at all.
func (s Sync) Pending() []string {
	if len(s.Synced) == 0 {
		return []string{"no sync yet"}
	}
	var out []string
	for fam, q := range s.Queued {
		if s.Synced[fam] < q {
			out = append(out, fam)
		}
	}
	return out
}

// ParseMetrics reads the two sync gauges from kube-proxy's /metrics (pkg/proxy/metrics:
// kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds and
// kubeproxy_sync_proxy_rules_last_timestamp_seconds, labelled by ip_family).
func ParseMetrics(text string) (Sync, error) {
	s := Sync{Queued: map[string]float64{}, Synced: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{"):
			into = s.Queued
		case strings.HasPrefix(line, "kubeproxy_sync_proxy_rules_last_timestamp_seconds{"):
			into = s.Synced
		default:
			continue
		}
		labels, value, ok := strings.Cut(line[strings.IndexByte(line, '{')+1:], "} ")
		if !ok {
			return s, fmt.Errorf("metric line %q", line)
		}
		fam := ""
		for kv := range strings.SplitSeq(labels, ",") {
			if v, ok := strings.CutPrefix(kv, `ip_family="`); ok {
				fam = strings.TrimSuffix(v, `"`)
			}
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsNaN(f) {
			return s, fmt.Errorf("metric line %q: %v", line, err)
		}
		into[fam] = f
	}
	return s, sc.Err()
}

// ReadSync fetches a node's kube-proxy metrics inside its namespace.
func ReadSync(ctx context.Context, node string) (Sync, error) {
	out, err := netns.Run(ctx, node, "curl", "-sf", "--max-time", "2", "http://"+MetricsAddr+"/metrics")
	if err != nil {
		return Sync{}, fmt.Errorf("kube-proxy metrics of %s: %w", node, err)
	}
	return ParseMetrics(out)
}

// settle is how long a change made before WaitSynced was called takes at most to reach
// kube-proxy's informers (a watch event on the lab's loopback-fast API): after it, a change
// that was made is queued, and "no queued change left" means it was synced.
const settle = 1 * time.Second

// Synced reports whether a node's kube-proxy has synced everything queued, and a change made
// before since has had time to be queued.
func Synced(s Sync, since, now time.Time) error {
	if now.Before(since.Add(settle)) {
		return fmt.Errorf("waiting %s for watch events to arrive", settle)
	}
	if p := s.Pending(); len(p) > 0 {
		return fmt.Errorf("kube-proxy has changes queued and not synced (%s)", strings.Join(p, ", "))
	}
	return nil
}
