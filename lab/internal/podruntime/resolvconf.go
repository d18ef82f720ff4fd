package podruntime

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ResolvConf is what the kubelet would mount as the pod's /etc/resolv.conf: the node's file for
// dnsPolicy Default, the cluster DNS with search domains for ClusterFirst (the API default).
func ResolvConf(pod *corev1.Pod, nodeResolvConf, clusterDNS string) string {
	policy := pod.Spec.DNSPolicy
	if policy == corev1.DNSClusterFirstWithHostNet && !pod.Spec.HostNetwork {
		policy = corev1.DNSClusterFirst
	}
	switch policy {
	case corev1.DNSDefault:
		return nodeResolvConf
	case corev1.DNSNone:
		var b strings.Builder
		if cfg := pod.Spec.DNSConfig; cfg != nil {
			for _, ns := range cfg.Nameservers {
				fmt.Fprintf(&b, "nameserver %s\n", ns)
			}
			if len(cfg.Searches) > 0 {
				fmt.Fprintf(&b, "search %s\n", strings.Join(cfg.Searches, " "))
			}
		}
		return b.String()
	case corev1.DNSClusterFirstWithHostNet:
		// hostNetwork pod without ClusterFirstWithHostNet semantics falls back to the node's.
		return nodeResolvConf
	default:
		if pod.Spec.HostNetwork {
			return nodeResolvConf
		}
		ns := pod.Namespace
		return fmt.Sprintf("search %s.svc.cluster.local svc.cluster.local cluster.local\nnameserver %s\noptions ndots:5\n", ns, clusterDNS)
	}
}
