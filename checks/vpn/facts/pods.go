package facts

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// podList is what the pod search found.
type podList struct {
	running    []*podMemos
	notRunning []corev1.Pod
	how        string
}

func (g *Gatherer) findPods(ctx context.Context) (podList, error) {
	opts := g.opts
	where := "all namespaces"
	if opts.Namespace != "" {
		where = "namespace " + opts.Namespace
	}
	list := metav1.ListOptions{}
	how := "image or container name contains \"openvpn\", in " + where
	if opts.Selector != nil {
		list.LabelSelector = opts.Selector.String()
		how = "selector " + list.LabelSelector + " in " + where
	}
	pl, err := g.seams.Client.CoreV1().Pods(opts.Namespace).List(ctx, list)
	if err != nil {
		return podList{}, fmt.Errorf("listing pods in %s: %w", where, err)
	}
	out := podList{how: how}
	for i := range pl.Items {
		p := &pl.Items[i]
		container := openVPNContainer(p)
		if container == "" && opts.Selector != nil && len(p.Spec.Containers) > 0 {
			container = p.Spec.Containers[0].Name // the user named the pods: trace them
		}
		if container == "" || p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase != corev1.PodRunning || !containerRunning(p, container) {
			out.notRunning = append(out.notRunning, *p)
			continue
		}
		out.running = append(out.running, &podMemos{pod: p, ref: podexec.PodRef{Namespace: p.Namespace, Name: p.Name}, container: container})
	}
	sort.Slice(out.running, func(i, j int) bool { return out.running[i].ref.String() < out.running[j].ref.String() })
	if len(out.running) == 0 && len(out.notRunning) == 0 {
		return out, &kube.UsageError{Message: "no OpenVPN pod found (" + how + ")", Fix: "name the VPN pods with --selector (and -n NAMESPACE)"}
	}
	return out, nil
}

// openVPNContainer is the first container whose image or name says OpenVPN.
func openVPNContainer(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if strings.Contains(strings.ToLower(c.Image), "openvpn") || strings.Contains(strings.ToLower(c.Name), "openvpn") {
			return c.Name
		}
	}
	return ""
}

func containerRunning(p *corev1.Pod, name string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.State.Running != nil
		}
	}
	return false
}

// findOwner follows pod -> ReplicaSet -> Deployment. Without permission to read the
// ReplicaSet it stops there: a patch to the ReplicaSet is still better than nothing.
func (g *Gatherer) findOwner(ctx context.Context, m *podMemos) Workload {
	w := Workload{Name: m.ref.Name, Namespace: m.ref.Namespace}
	ref := metav1.GetControllerOf(m.pod)
	if ref == nil {
		return w
	}
	w.Kind, w.Name = ref.Kind, ref.Name
	if ref.Kind != "ReplicaSet" {
		return w
	}
	rs, err := g.seams.Client.AppsV1().ReplicaSets(m.ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return w
	}
	d := metav1.GetControllerOf(rs)
	if d == nil || d.Kind != "Deployment" {
		return w
	}
	w.Kind, w.Name = d.Kind, d.Name
	if dep, err := g.seams.Client.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
		w.Meta = &dep.ObjectMeta
	}
	return w
}

// namespaceLabels are the labels of the pod's namespace.
func (g *Gatherer) namespaceLabels(ctx context.Context, m *podMemos) map[string]string {
	return g.labelsOfNamespace(ctx, m.ref.Namespace)
}
