package labctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// DedicatedTaint keeps ordinary pods off a node that is one pod's own namespace.
const DedicatedTaint = "lab.lanaccess.io/dedicated"

// kwokStages are the stage files (relative to kwok's kustomize/stage) that make nodes Ready,
// keep their leases fresh, complete Job pods and delete pods; the lab's own stages
// (podStartStage, podReadyStage) replace kwok's pod-ready.
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// clusterExec makes `kubectl exec` run the command locally, i.e. inside the namespace kwok was
// started in: the node's.
const clusterExec = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: local-exec
spec:
  execs:
  - local: {}
`

func ProcKwok(node string) string { return "kwok-" + node }

// LoggedPods are the pods ("namespace/name") whose container logs the lab's kwoks serve, each
// from the file PodLogsFile names: the Helm test pods of lab/e2e's helm test, which plays the
// kubelet's part for them. kwok v0.8.0 maps logs per pod name, not by template
// (pkg/kwok/server/debugging_logs.go, getPodLogs), hence a list.
var LoggedPods = []string{"lanaccess/e2e-lanaccess-doctor", "vpn/e2e-lanaccess-vpn-trace"}

// PodLogsFile is the file kwok serves as every container log of the logged pod
// namespace/name, in the CRI log format a container runtime writes (kwok reads it with
// k8s.io/cri-client's ReadLogs).
func PodLogsFile(l layout.Layout, namespace, name string) string {
	return l.Path("kwok", "logs", namespace+"_"+name+".log")
}

// clusterLogs maps each of LoggedPods to its PodLogsFile.
func clusterLogs(l layout.Layout) string {
	var b strings.Builder
	for i, p := range LoggedPods {
		ns, name, _ := strings.Cut(p, "/")
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: lab-logs-%d
spec:
  selector:
    matchNamespaces: [%q]
    matchNames: [%q]
  logs:
  - logsFile: %q
`, i, ns, name, PodLogsFile(l, ns, name))
	}
	return b.String()
}

// kwokConfig is the content of kwok's --config: stages, the local ClusterExec and the logged
// pods' logs.
func kwokConfig(l layout.Layout, bins binaries.Set) (string, error) {
	var docs []string
	for _, rel := range kwokStages {
		b, err := os.ReadFile(filepath.Join(bins.KwokStagesDir(), rel))
		if err != nil {
			return "", fmt.Errorf("kwok stage %s: %w", rel, err)
		}
		docs = append(docs, strings.TrimSpace(string(b)))
	}
	docs = append(docs, strings.TrimSpace(podStartStage), strings.TrimSpace(podReadyStage), strings.TrimSpace(clusterExec), strings.TrimSpace(clusterLogs(l)))
	return strings.Join(docs, "\n---\n") + "\n", nil
}

func kwokConfigPath(l layout.Layout) string { return l.Path("kwok", "config.yaml") }

// KwokConfigPath is the kwok configuration (stages, local ClusterExec) every lab kwok uses.
func KwokConfigPath(l layout.Layout) string { return kwokConfigPath(l) }

func writeKwokConfig(l layout.Layout, bins binaries.Set) (string, error) {
	conf, err := kwokConfig(l, bins)
	if err != nil {
		return "", err
	}
	path := kwokConfigPath(l)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(conf), 0o600)
}

// kwokConfigCurrent reports whether the running kwoks use the configuration this code writes.
func kwokConfigCurrent(l layout.Layout, bins binaries.Set) bool {
	want, err := kwokConfig(l, bins)
	if err != nil {
		return false
	}
	have, err := os.ReadFile(kwokConfigPath(l))
	return err == nil && string(have) == want
}

func kwokSpec(l layout.Layout, bins binaries.Set, n layout.Node, config string) procs.Spec {
	argv := append([]string{bins.KwokBin(),
		"--config=" + config,
		"--kubeconfig=" + kubeconfigPath(l, pki.KwokClient(n.NS)),
		"--manage-single-node=" + n.NS,
		"--node-name=" + n.NS,
		"--node-ip=" + n.LANIP,
		"--node-port=" + strconv.Itoa(l.KubeletPort),
		"--cidr=" + n.PodCIDR,
		"--node-lease-duration-seconds=40",
	}, kwokServing(l, n)...)
	return procs.Spec{Name: ProcKwok(n.NS), NS: n.NS, Dir: l.StateDir, Argv: argv}
}

// createNodes registers the Node objects kwok will manage, with their pod CIDR (kwok allocates
// pod IPs from spec.podCIDR) and the taint that reserves a dedicated node.
func createNodes(ctx context.Context, c kubernetes.Interface, l layout.Layout) error {
	for _, n := range l.Nodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: n.NS,
				Labels: map[string]string{
					"kubernetes.io/hostname": n.NS,
					"kubernetes.io/os":       "linux",
					"kubernetes.io/arch":     "amd64",
					"type":                   "kwok",
				},
				Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			},
			Spec: corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}},
		}
		if n.Dedicated {
			node.Labels["lab.lanaccess.io/role"] = "vpn"
			node.Spec.Taints = []corev1.Taint{{Key: DedicatedTaint, Value: "vpn", Effect: corev1.TaintEffectNoSchedule}}
		}
		if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.NS, err)
		}
	}
	return nil
}

// waitNodesReady waits until every lab node reports Ready.
func waitNodesReady(ctx context.Context, c kubernetes.Interface, l layout.Layout, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var notReady []string
	for time.Now().Before(deadline) {
		notReady = notReady[:0]
		for _, n := range l.Nodes {
			node, err := c.CoreV1().Nodes().Get(ctx, n.NS, metav1.GetOptions{})
			if err != nil || !NodeReady(node) {
				notReady = append(notReady, n.NS)
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("nodes not Ready after %s: %s (logs: %s)", timeout, strings.Join(notReady, ", "), l.LogDir())
}

// NodeReady reports the node's Ready condition.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
