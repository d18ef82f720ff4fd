package config

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// The findings that LA102 (the proxy Service) and LA103 (the DNS Service) share: each is
// judged the same way for either Service, the check passing its ID (the codes are ID-...) and
// the role of the pods.

// targetPortPatch points the Service port at value (a number or a port name), as a JSON
// patch on the port's index.
func targetPortPatch(svc *corev1.Service, sp corev1.ServicePort, value any) string {
	idx := 0
	for i, p := range svc.Spec.Ports {
		if p.Port == sp.Port && kubeobj.Protocol(p.Protocol) == kubeobj.Protocol(sp.Protocol) {
			idx = i
		}
	}
	return remedy.JSONPatch(svc.Namespace, "service", svc.Name, remedy.PatchOp{Op: "replace", Path: fmt.Sprintf("/spec/ports/%d/targetPort", idx), Value: value})
}

// endpointFindings checks that the Service selects pods and has ready endpoints; codes are
// id-NO-SELECTOR, id-NO-POD and id-NO-READY-ENDPOINT.
func endpointFindings(s *kube.Setup, id string, svc *corev1.Service, pods []corev1.Pod, role string) []engine.Finding {
	obj := kubeobj.ServiceRef(svc)
	key := svc.Namespace + "/" + svc.Name
	eps, sliced := s.EndpointSlices[key]
	ready := kubeobj.ReadyEndpoints(eps)
	var out []engine.Finding
	if len(svc.Spec.Selector) == 0 {
		out = append(out, engine.Finding{Code: id + "-NO-SELECTOR", Severity: engine.SeverityWarn, Object: obj,
			Message: "the Service has no selector: its endpoints are maintained by hand and do not follow the pods",
			Remediation: "# a diagnosis, not a fix doctor can prove: which pods should back the Service is for you to say; its hand-made endpoints:\n" +
				remedy.Kubectl(svc.Namespace, "get", "endpointslices", "-l", "kubernetes.io/service-name="+svc.Name, "-o", "wide")})
	} else if len(pods) == 0 && s.Unread(kube.ReadKeysIn(svc.Namespace, "pods")[0]) == nil {
		sel := labels.SelectorFromSet(svc.Spec.Selector).String()
		out = append(out, engine.Finding{Code: id + "-NO-POD", Severity: engine.SeverityFail, Object: obj,
			Message:  fmt.Sprintf("the selector %s matches no pod: nothing serves the %s on the LAN addresses", sel, role),
			Evidence: map[string]any{"selector": sel},
			Remediation: "# a diagnosis, not a fix doctor can prove: compare the pods' labels with the selector, then correct one of them\n" +
				remedy.Kubectl(svc.Namespace, "get", "pods", "--show-labels") + "   # compare with: " + sel})
		return out
	}
	if !sliced {
		return out // unread: partialOutcome says so
	}
	if len(ready) == 0 {
		var states []string
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s on %s: %s", p.Name, p.Spec.NodeName, kubeobj.PodState(&p)))
		}
		out = append(out, engine.Finding{Code: id + "-NO-READY-ENDPOINT", Severity: engine.SeverityFail, Object: obj,
			Message:  fmt.Sprintf("no ready endpoint: the %s answers nothing on the LAN addresses", role),
			Evidence: map[string]any{"pods": states, "endpointSlices": len(eps)},
			Remediation: "# a diagnosis, not a fix doctor can prove: why the pods are not ready is in their status and events\n" +
				remedy.Kubectl(svc.Namespace, "get", "pods", "-l", labels.SelectorFromSet(svc.Spec.Selector).String(), "-o", "wide") + "\n" +
				remedy.Kubectl(svc.Namespace, "describe", "endpointslices", "-l", "kubernetes.io/service-name="+svc.Name)})
	}
	return out
}

// localPolicyFindings: with externalTrafficPolicy Local, kube-proxy sends traffic for an
// externalIP only to endpoints on the node that received it; a node carrying an address
// without a ready endpoint drops it.
func localPolicyFindings(s *kube.Setup, id string, svc *corev1.Service) []engine.Finding {
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil
	}
	eps, ok := s.EndpointSlices[svc.Namespace+"/"+svc.Name]
	if !ok {
		return nil
	}
	withEndpoint := map[string]bool{}
	for _, e := range kubeobj.ReadyEndpoints(eps) {
		withEndpoint[e.Node] = true
	}
	var out []engine.Finding
	for _, ip := range svc.Spec.ExternalIPs {
		f := readAddr(ip)
		if !f.Addr.IsValid() {
			continue
		}
		for _, n := range kubeobj.NodesWithInternalIP(s.Nodes, f.Addr) {
			if withEndpoint[n.Name] {
				continue
			}
			out = append(out, engine.Finding{
				Code: id + "-LOCAL-POLICY", Severity: engine.SeverityFail, Object: fmt.Sprintf("%s (%s)", n.Name, f.Addr),
				Message:  fmt.Sprintf("%s has externalTrafficPolicy Local and no ready pod on %s: connections to %s are dropped", kubeobj.ServiceRef(svc), n.Name, f.Addr),
				Evidence: map[string]any{"externalTrafficPolicy": "Local", "nodesWithEndpoints": slices.Sorted(maps.Keys(withEndpoint))},
				Remediation: remedy.MergePatch(svc.Namespace, "service", svc.Name, map[string]any{"spec": map[string]any{"externalTrafficPolicy": "Cluster"}}) +
					"   # or run a pod on every node that carries an address",
			})
		}
	}
	return out
}
