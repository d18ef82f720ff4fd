package config

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// clusterNamesFindings: a block that serves the LAN's port (the DNS Service's target port) and
// carries the kubernetes plugin answers the cluster's names to the LAN: any host of the LAN
// resolves every Service name (and, with `pods insecure`, pod names) and reverse-maps cluster
// addresses (coredns/coredns v1.14.7 plugin/kubernetes/kubernetes.go ServeDNS; the real binary
// answers kubernetes.default.svc.cluster.local on the lan-dns port of testdata/corpus
// kubeadm-coredns-as-lan-dns and microk8s-coredns-as-lan-dns). The cluster DNS reused as the LAN
// DNS (kubeadm's, k3s's, microk8s's CoreDNS given externalIPs) does it.
func clusterNamesFindings(s *kube.Setup, cf *corefile.Corefile, port string) []engine.Finding {
	var out []engine.Finding
	for _, b := range cf.ServedOn(port) {
		for _, p := range b.PluginsNamed("kubernetes") {
			zones := p.Args
			if len(zones) == 0 {
				zones = b.Zones()
			}
			msg := fmt.Sprintf("%s, which the LAN reaches on port %s, carries `kubernetes %s` (%s): any host of the LAN resolves every Service name of the cluster and reverse-maps its addresses",
				b.Label(), port, strings.Join(zones, " "), p.Where())
			if pluginHasLine(p, "pods", "insecure") || pluginHasLine(p, "pods", "verified") {
				msg += ", and pod names too"
			}
			out = append(out, engine.Finding{Code: "LA104-CLUSTER-NAMES", Severity: engine.SeverityFail, Object: findingObject(s, p.File),
				Message:     msg,
				Evidence:    map[string]any{"block": b.Label(), "plugin": p.Where(), "zones": zones, "port": port},
				Remediation: remedy.Comment("give the LAN its own CoreDNS (the lan-dns Deployment, ConfigMap and Service) serving only the zone and forwarding the rest, move the externalIPs to its Service, and keep the cluster DNS on its ClusterIP (the fix cannot be proven before it is written)")})
		}
	}
	return out
}

// pluginHasLine reports a line of a plugin's block whose words are words.
func pluginHasLine(p corefile.Plugin, words ...string) bool {
	for _, l := range p.Block {
		if strings.Join(append([]string{l.Name}, l.Args...), " ") == strings.Join(words, " ") {
			return true
		}
	}
	return false
}
