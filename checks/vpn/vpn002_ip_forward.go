package vpn

import (
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// VPNForwarding is VPN002: net.ipv4.ip_forward inside each VPN pod's network namespace. The
// value is per namespace: the node's setting says nothing about the pod's.
func VPNForwarding(env *Env) engine.Check {
	return judged(env, "VPN002", facts.NeedForwarding, func(run *facts.Run) engine.Outcome { return perPod(run, judgeForwarding) })
}

func judgeForwarding(p *facts.Pod) ([]engine.Finding, error) {
	f, err := p.Forwarding, p.ForwardingErr
	ev := map[string]any{"ip_forward": f.Value, "readWith": f.Method, "node": p.Pod.Spec.NodeName}
	switch {
	case err != nil && podexec.IsToolMissing(err):
		return []engine.Finding{{Code: "VPN002-NO-TOOL", Severity: engine.SeverityWarn, Object: p.Object(),
			Message:     err.Error() + "; an ephemeral debug container shares the pod's network namespace and can read it",
			Remediation: remedy.Kubectl(p.Ref.Namespace, "debug", p.Ref.Name, "-it", "--image=busybox:1.36.1", "--target="+p.Container, "--", "cat", "/proc/sys/net/ipv4/ip_forward")}}, err
	case err != nil:
		return nil, err
	case f.Value == "0":
		return []engine.Finding{{Code: "VPN002-OFF", Severity: engine.SeverityFail, Object: p.Object(), Evidence: ev,
			Message:     "net.ipv4.ip_forward = 0 in the pod's network namespace: client packets arrive through the tunnel and the kernel refuses to route them on, so only the tunnel peer answers",
			Remediation: remedy.Commentf("# immediate, for this pod only: %s (the durable change is in VPN003 and VPN008)\n", handFixLifetime) + handFix(p)}}, nil
	}
	return []engine.Finding{{Code: "VPN002-ON", Severity: engine.SeverityInfo, Object: p.Object(), Message: "net.ipv4.ip_forward = 1", Evidence: ev}}, nil
}

// handFix turns forwarding on in the running pod.
func handFix(p *facts.Pod) string {
	return remedy.Kubectl(p.Ref.Namespace, "exec", p.Ref.Name, "-c", p.Container, "--", "sysctl", "-w", "net.ipv4.ip_forward=1")
}
