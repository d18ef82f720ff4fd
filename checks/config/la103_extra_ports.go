package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
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
	return []engine.Finding{{Code: "LA103-EXTRA-PORT", Severity: engine.SeverityWarn, Object: kubeobj.ServiceRef(svc),
		Message: fmt.Sprintf("the DNS Service also carries %v on the node addresses: kube-proxy captures every port of a Service on its externalIPs, so the whole LAN reaches them (CoreDNS's metrics on 9153 list every zone, its query counts and upstreams); the setup needs 53/UDP and 53/TCP only",
			described),
		Evidence:    map[string]any{"ports": described, "externalIPs": svc.Spec.ExternalIPs},
		Remediation: movePortsInside(svc, idx)}}
}
