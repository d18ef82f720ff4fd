package config

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// extraDNSPortFindings: kube-proxy captures every port of a Service on each of its externalIPs
// (kubernetes/kubernetes pkg/proxy/iptables/proxier.go syncProxyRules, "Capture externalIPs":
// one rule per Service port), so a port of the DNS Service beyond 53 is open to the whole LAN
// on the node addresses. CoreDNS's metrics (9153: every zone's query counts, its upstreams;
// coredns/coredns v1.14.7 plugin/metrics listens on every interface of the pod unless told
// otherwise) are the usual one, copied from the cluster DNS Service. The setup needs 53/UDP and
// 53/TCP only. The fix moves the other ports to a Service of their own, without externalIPs,
// so whatever scrapes them inside the cluster keeps them.
func extraDNSPortFindings(svc *corev1.Service) []engine.Finding {
	if len(kubeobj.ExternalAddrs(svc)) == 0 {
		return nil
	}
	var extra []corev1.ServicePort
	var idx []int
	for i, p := range svc.Spec.Ports {
		if p.Port != 53 {
			extra, idx = append(extra, p), append(idx, i)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	described := make([]string, 0, len(extra))
	for _, p := range extra {
		described = append(described, fmt.Sprintf("%d/%s", p.Port, kubeobj.Protocol(p.Protocol)))
	}
	inside := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-internal", Labels: svc.Labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: svc.Spec.Selector, Ports: extra},
	}
	// removed from the highest index down, each after a test that it is the port named
	ops := make([]remedy.PatchOp, 0, 2*len(idx))
	for k, i := range slices.Backward(idx) {
		path := fmt.Sprintf("/spec/ports/%d", i)
		ops = append(ops, remedy.PatchOp{Op: "test", Path: path + "/port", Value: extra[k].Port},
			remedy.PatchOp{Op: "remove", Path: path})
	}
	return []engine.Finding{{Code: "LA103-EXTRA-PORT", Severity: engine.SeverityWarn, Object: kubeobj.ServiceRef(svc),
		Message: fmt.Sprintf("the DNS Service also carries %v on the node addresses: kube-proxy captures every port of a Service on its externalIPs, so the whole LAN reaches them (CoreDNS's metrics on 9153 list every zone, its query counts and upstreams); the setup needs 53/UDP and 53/TCP only",
			described),
		Evidence: map[string]any{"ports": described, "externalIPs": svc.Spec.ExternalIPs},
		Remediation: kube.ManagedNote(svc, "Service", "spec.ports") +
			remedy.Comment("keep the other ports inside the cluster, on a Service without externalIPs, then take them off this one:") + "\n" +
			remedy.Apply(remedy.YAML(inside)) + "\n" +
			remedy.JSONPatch(svc.Namespace, "service", svc.Name, ops...)}}
}
