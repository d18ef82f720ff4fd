package vpn

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// VPNFindPods is VPN001: the OpenVPN pods to trace, every replica (a replaced pod starts again
// from the image's defaults, so one healthy replica proves nothing about the others).
func VPNFindPods(env *Env) engine.Check { return judged(env, "VPN001", 0, judgeFindPods) }

func judgeFindPods(run *facts.Run) engine.Outcome {
	fs := make([]engine.Finding, 0, len(run.Pods)+len(run.NotRunning))
	for _, p := range run.Pods {
		fs = append(fs, engine.Finding{Code: "VPN001-TRACED", Severity: engine.SeverityInfo, Object: p.Object(),
			Message:  fmt.Sprintf("traced: container %s on node %s, pod IP %s (%s)", p.Container, p.Pod.Spec.NodeName, p.Pod.Status.PodIP, run.How),
			Evidence: map[string]any{"node": p.Pod.Spec.NodeName, "podIP": p.Pod.Status.PodIP, "container": p.Container, "image": p.Image()}})
	}
	for _, p := range run.NotRunning {
		fs = append(fs, engine.Finding{Code: "VPN001-NOT-RUNNING", Severity: engine.SeverityWarn, Object: "Pod " + p.Namespace + "/" + p.Name,
			Message:     fmt.Sprintf("not traced: the pod is %s (%s); when it starts it gets the ip_forward its node and CNI give a new pod, not what a running replica was set to", p.Status.Phase, podWaitingReason(&p)),
			Remediation: remedy.Kubectl(p.Namespace, "describe", "pod", p.Name)})
	}
	if len(run.Pods) == 0 {
		return engine.Outcome{Findings: fs, Err: fmt.Errorf("no running OpenVPN pod to trace (%s)", run.How)}
	}
	return engine.Outcome{Findings: fs}
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
