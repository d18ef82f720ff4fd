package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// reachFindings judges the form a role is reached in, beyond the Service (LA102 for the
// proxy, LA103 for the DNS; issue 26):
//   - hostPort: every pod maps each of the role's ports (80/TCP and 443/TCP; 53/UDP and
//     53/TCP) on its node: portmap DNATs exactly the mappings the runtime passes it
//     (containernetworking/plugins v1.10.0 plugins/meta/portmap: one DNAT per portMapping,
//     per protocol), so a port left out is not reachable on that node. A pod that is not Ready
//     still gets what portmap DNATs (its rules live with the sandbox, readiness is not looked
//     at): WARN;
//   - LoadBalancer: the implementation must hand out node addresses (k3s ServiceLB, Cilium
//     node IPAM); MetalLB cannot, and an implementation doctor does not model is never a PASS.
func reachFindings(id, role string, obj string, r kube.Reach) []engine.Finding {
	switch r.Form {
	case kube.FormHostPort:
		return hostPortFindings(id, role, r)
	case kube.FormLoadBalancer:
		if r.LB.NodeAddresses {
			return nil
		}
		name := r.LB.Name
		if name == "" {
			name = "not recognised"
		}
		return []engine.Finding{{Code: id + "-LB-NOT-NODE-ADDRESSES", Severity: engine.SeverityWarn, Object: obj,
			Message:     fmt.Sprintf("the %s Service is a LoadBalancer whose implementation (%s) does not hand out the nodes' own addresses: %s", role, name, r.LB.Why),
			Evidence:    map[string]any{"implementation": r.LB.Name, "addresses": r.Raw()},
			Remediation: remedy.Commentf("# keep the nodes' LAN addresses as entry points: pods with hostPorts (a DaemonSet), k3s ServiceLB, or Cilium node IPAM (spec.loadBalancerClass: io.cilium/node); see docs/after-externalips.md")}}
	}
	return nil
}

func hostPortFindings(id, role string, r kube.Reach) []engine.Finding {
	var out []engine.Finding
	for _, p := range r.Pods {
		obj := fmt.Sprintf("Pod %s (node %s)", p.Pod, p.Node)
		var missing []string
		for _, port := range r.Ports {
			if !slices.Contains(p.Mapped, port) {
				missing = append(missing, port)
			}
		}
		if len(missing) > 0 {
			out = append(out, engine.Finding{Code: id + "-HOSTPORT-MISSING", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("the %s pod maps %s but not %s as hostPort: on node %s nothing answers %s", role, strings.Join(p.Mapped, ", "), strings.Join(missing, ", "), p.Node, strings.Join(missing, ", ")),
				Evidence:    map[string]any{"mapped": p.Mapped, "missing": missing, "node": p.Node, "nodeAddresses": p.NodeAddrs},
				Remediation: remedy.Commentf("# add to the container's ports of the pod template (the DaemonSet's):\n# %s", hostPortLines(missing))})
		}
		if !p.Ready {
			out = append(out, engine.Finding{Code: id + "-HOSTPORT-NOT-READY", Severity: engine.SeverityWarn, Object: obj,
				Message:  fmt.Sprintf("the %s pod on node %s is not Ready, yet portmap still sends it what reaches %s on the node: the zone must not answer this node until it is Ready", role, p.Node, strings.Join(p.Mapped, ", ")),
				Evidence: map[string]any{"node": p.Node, "mapped": p.Mapped}})
		}
	}
	return out
}

// hostPortLines are the container ports to add: "- {containerPort: N, hostPort: 53, protocol: TCP}".
func hostPortLines(ports []string) string {
	lines := make([]string, 0, len(ports))
	for _, p := range ports {
		num, proto, _ := strings.Cut(p, "/")
		lines = append(lines, fmt.Sprintf("- {containerPort: <the container's port for %s>, hostPort: %s, protocol: %s}", p, num, proto))
	}
	return strings.Join(lines, "; ")
}
