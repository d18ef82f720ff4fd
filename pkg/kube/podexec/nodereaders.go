package podexec

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// NodeReader is a system DaemonSet whose pods may read a node's sockets in place of a helper.
// What such a pod answers is the node's because only cluster administrators change what runs
// in these namespaces. A tenant's hostNetwork pod is never used: whoever controls its image
// controls what its `cat /proc/net/tcp` prints, and could answer for LA201.
type NodeReader struct {
	Namespace string
	Name      string
}

func (r NodeReader) String() string { return r.Namespace + "/" + r.Name }

// TrustedNodeReaders is the allowlist: kube-proxy and the CNI agents that run on every node
// with the host's network, each in the namespace and under the name its upstream installer
// uses (kube-proxy: kubeadm's addon; Calico: the operator's calico-system/calico-node and
// calico.yaml's kube-system/calico-node; Cilium: its Helm chart's kube-system/cilium; Flannel:
// kube-flannel.yml's kube-flannel/kube-flannel-ds, kube-system before v0.20). A pod is matched
// by its controller (an apps/v1 DaemonSet of that namespace and name, whose UID the API
// confirms), never by its name.
func TrustedNodeReaders() []NodeReader {
	return []NodeReader{
		{Namespace: "kube-system", Name: "kube-proxy"},
		{Namespace: "kube-system", Name: "cilium"},
		{Namespace: "calico-system", Name: "calico-node"},
		{Namespace: "kube-system", Name: "calico-node"},
		{Namespace: "kube-flannel", Name: "kube-flannel-ds"},
		{Namespace: "kube-system", Name: "kube-flannel-ds"},
	}
}

// ReaderTrust tells the pods that may answer for a node: those of a TrustedNodeReaders
// DaemonSet, confirmed through the API. One per run; safe for concurrent use.
type ReaderTrust struct {
	client client.Interface
	mu     sync.Mutex
	// uids caches the UID of each trusted DaemonSet ("" when it could not be read).
	uids map[NodeReader]string
}

// NewReaderTrust reads DaemonSets through client.
func NewReaderTrust(client client.Interface) *ReaderTrust {
	return &ReaderTrust{client: client, uids: map[NodeReader]string{}}
}

// Of returns the allowlisted DaemonSet that controls p, if the API confirms it.
func (t *ReaderTrust) Of(ctx context.Context, p *corev1.Pod) (NodeReader, bool) {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != "apps/v1" {
		return NodeReader{}, false
	}
	want := NodeReader{Namespace: p.Namespace, Name: ref.Name}
	if !slices.Contains(TrustedNodeReaders(), want) {
		return NodeReader{}, false
	}
	uid := t.uid(ctx, want)
	return want, uid != "" && uid == string(ref.UID)
}

// uid reads the DaemonSet's UID once per run ("" when it cannot be read: not trusted).
func (t *ReaderTrust) uid(ctx context.Context, r NodeReader) string {
	t.mu.Lock()
	uid, seen := t.uids[r]
	t.mu.Unlock()
	if seen {
		return uid
	}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ds, err := t.client.AppsV1().DaemonSets(r.Namespace).Get(gctx, r.Name, metav1.GetOptions{})
	if err == nil {
		uid = string(ds.UID)
	}
	t.mu.Lock()
	t.uids[r] = uid
	t.mu.Unlock()
	return uid
}

// existing tries the pods of trusted system DaemonSets on the node (those sharing the host
// PID namespace first: they can also name the owning processes; with NameOwners, only those).
// Any failure (exec denied, no shell in the image) just moves on: a helper pod is the fallback.
func (s *NodeShells) existing(ctx context.Context, node string) *NodeShell {
	pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil
	}
	var cands []*NodeShell
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node || !p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		if s.cfg.NameOwners && !p.Spec.HostPID {
			continue
		}
		container := runningContainer(*p)
		if container == "" {
			continue
		}
		reader, ok := s.trust.Of(ctx, p)
		if !ok {
			continue
		}
		cands = append(cands, &NodeShell{Node: node, Pod: PodRef{p.Namespace, p.Name}, Container: container,
			HostPID: p.Spec.HostPID, Reader: reader.String(), exec: s.exec, owner: s})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].HostPID != cands[j].HostPID {
			return cands[i].HostPID
		}
		return cands[i].Pod.String() < cands[j].Pod.String()
	})
	for i, sh := range cands {
		if i >= s.cfg.ExistingPodAttempts {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _, err := sh.Exec(pctx, []string{"cat", "/proc/net/tcp"})
		cancel()
		if err == nil {
			return sh
		}
	}
	return nil
}

func runningContainer(p corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return cs.Name
		}
	}
	return ""
}
