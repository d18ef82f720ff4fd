package vpn

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// VPNFindPods is VPN001: the OpenVPN pods to trace, every replica (a replaced pod starts again
// from the image's defaults, so one healthy replica proves nothing about the others).
func VPNFindPods(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN001", func(ctx context.Context) engine.Outcome { return t.findPodsOutcome(ctx) })
}

func (t *vpnTrace) findPodsOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	var fs []engine.Finding
	for _, p := range pods.Running {
		fs = append(fs, engine.Finding{Code: "VPN001-TRACED", Severity: engine.SeverityInfo, Object: p.object(),
			Message:  fmt.Sprintf("traced: container %s on node %s, pod IP %s (%s)", p.Container, p.Pod.Spec.NodeName, p.Pod.Status.PodIP, pods.How),
			Evidence: map[string]any{"node": p.Pod.Spec.NodeName, "podIP": p.Pod.Status.PodIP, "container": p.Container, "image": containerImage(p.Pod, p.Container)}})
	}
	for _, p := range pods.NotRunning {
		fs = append(fs, engine.Finding{Code: "VPN001-NOT-RUNNING", Severity: engine.SeverityWarn, Object: "Pod " + p.Namespace + "/" + p.Name,
			Message:     fmt.Sprintf("not traced: the pod is %s (%s); when it starts it reads the image's default ip_forward again", p.Status.Phase, podWaitingReason(&p)),
			Remediation: fmt.Sprintf("kubectl -n %s describe pod %s", p.Namespace, p.Name)})
	}
	if len(pods.Running) == 0 {
		return engine.Outcome{Findings: fs, Err: fmt.Errorf("no running OpenVPN pod to trace (%s)", pods.How)}
	}
	return engine.Outcome{Findings: fs}
}

// vpnPods finds the pods once per run.
func (t *vpnTrace) vpnPods(ctx context.Context) (vpnPods, error) {
	return t.pods.get(ctx, t.findPods)
}

func (t *vpnTrace) findPods(ctx context.Context) (vpnPods, error) {
	opts := t.env.Options
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
	pl, err := t.env.Client.CoreV1().Pods(opts.Namespace).List(ctx, list)
	if err != nil {
		return vpnPods{}, fmt.Errorf("listing pods in %s: %w", where, err)
	}
	var out vpnPods
	out.How = how
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
			out.NotRunning = append(out.NotRunning, *p)
			continue
		}
		out.Running = append(out.Running, &vpnPod{Pod: p, Ref: kube.PodRef{Namespace: p.Namespace, Name: p.Name}, Container: container})
	}
	sort.Slice(out.Running, func(i, j int) bool { return out.Running[i].Ref.String() < out.Running[j].Ref.String() })
	if len(out.Running) == 0 && len(out.NotRunning) == 0 {
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

func containerImage(p *corev1.Pod, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

func podWaitingReason(p *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return cs.Name + ": " + w.Reason
		}
	}
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	return "not running"
}
