package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ExternalIPsSecurity is LA106. Anyone who may create or edit a Service may claim any address
// in spec.externalIPs and receive the traffic meant for it (CVE-2020-8554, not fixable in
// Kubernetes itself): no other Service may claim our addresses on our ports, and on a shared
// cluster an admission control should reserve the field. The field is also deprecated
// (KEP-5707): kube-proxy is planned to stop implementing it by default.
func ExternalIPsSecurity(env *Env) engine.Check {
	return check(env, "LA106", externalIPsSecurity)
}

func externalIPsSecurity(s *kube.Setup) engine.Outcome {
	if !s.UsesExternalIPs() {
		// Issue 26: neither role is reached through spec.externalIPs, so the admission policy
		// that guards them, kube-proxy's AllowServiceExternalIPs gate and the deprecation do
		// not bear on this setup.
		return engine.Outcome{Skip: fmt.Sprintf("the setup does not use spec.externalIPs (proxy: %s; DNS: %s): the externalIPs admission policy, kube-proxy's AllowServiceExternalIPs gate and the field's deprecation do not apply; another Service's externalIPs on the node addresses (CVE-2020-8554) are not judged for this form",
			s.ProxyReachable().Form, s.DNSReachable().Form)}
	}
	judged := judgeClaims(s)
	findings := interceptionFindings(s, judged)
	prot, unknown := protectionFindings(s, judged)
	findings = append(findings, prot...)
	findings = append(findings, kubeProxyFindings(s)...)
	findings = append(findings, deprecationFinding(s))
	var unread []string
	if err := s.Unread(kube.ReadKey("", "services", "")); err != nil {
		unread = append(unread, "Services in other namespaces could not be read, so interception by them is not checked: "+err.Error())
	}
	unread = append(unread, unknown...)
	return engine.Partial("LA106", findings, strings.Join(unread, "; "))
}

// kubeProxyFindings reads kubeadm's kube-proxy configuration: with the feature gate
// AllowServiceExternalIPs off, kube-proxy programs no rule for any externalIP.
func kubeProxyFindings(s *kube.Setup) []engine.Finding {
	if s.KubeProxyConfig == "" {
		return nil
	}
	const obj = "ConfigMap kube-system/kube-proxy"
	var cfg struct {
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if err := yaml.Unmarshal([]byte(s.KubeProxyConfig), &cfg); err != nil {
		return []engine.Finding{{Code: "LA106-KUBE-PROXY-CONFIG", Severity: engine.SeverityWarn, Object: obj,
			Message:  "config.conf does not parse, so kube-proxy's feature gates are unknown (and kube-proxy itself cannot load it on restart): " + err.Error(),
			Evidence: map[string]any{"key": "config.conf", "error": err.Error()},
			Remediation: "kubectl -n kube-system edit configmap kube-proxy   # fix config.conf at the line named above\n" +
				"# (not proven by doctor: what the file should say is for a person to read from the error)"}}
	}
	if on, set := cfg.FeatureGates["AllowServiceExternalIPs"]; set && !on {
		return []engine.Finding{{Code: "LA106-KUBE-PROXY-GATE-OFF", Severity: engine.SeverityFail, Object: obj,
			Message:     "kube-proxy runs with the feature gate AllowServiceExternalIPs=false: it programs no rule for any externalIP, so nothing answers on the LAN addresses",
			Evidence:    map[string]any{"featureGates": cfg.FeatureGates},
			Remediation: kubeProxyGatePatch(s.KubeProxyConfig)}}
	}
	return nil
}

// kubeProxyGatePatch writes AllowServiceExternalIPs: true into kube-proxy's config.conf (the
// rest of the file as it is, re-marshalled) and restarts kube-proxy, which reads it at start.
func kubeProxyGatePatch(config string) string {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(config), &m); err != nil || m == nil {
		return "kubectl -n kube-system edit configmap kube-proxy   # featureGates: {AllowServiceExternalIPs: true}\nkubectl -n kube-system rollout restart daemonset kube-proxy"
	}
	gates, _ := m["featureGates"].(map[string]any)
	if gates == nil {
		gates = map[string]any{}
	}
	gates["AllowServiceExternalIPs"] = true
	m["featureGates"] = gates
	out, err := yaml.Marshal(m)
	if err != nil {
		panic(err) // a map read from YAML always marshals
	}
	return remedy.MergePatch("kube-system", "configmap", "kube-proxy", map[string]any{"data": map[string]any{"config.conf": string(out)}}) + "\n" +
		remedy.Kubectl("kube-system", "rollout", "restart", "daemonset", "kube-proxy")
}

// deprecationFinding explains the API's warning about spec.externalIPs (sent on writes, so
// doctor's reads rarely see it) and what the coming releases change.
func deprecationFinding(s *kube.Setup) engine.Finding {
	var seen []string
	for _, w := range s.APIWarnings {
		if strings.Contains(w, "externalIPs") {
			seen = append(seen, w)
		}
	}
	ev := map[string]any{
		"kep":           "https://kep.k8s.io/5707",
		"apiWarning":    "spec.externalIPs is deprecated and may no longer be implemented in some clusters",
		"timeline":      "deprecated in 1.36 (warning on create/update); planned: kube-proxy gate AllowServiceExternalIPs off by default in 1.40, implementation removed in 1.43",
		"serverVersion": s.ServerVersion,
		"cis":           "CIS Kubernetes Benchmark 1.2.3 (kube-bench cfg/cis-1.10/master.yaml): --enable-admission-plugins has DenyServiceExternalIPs; compensating control: the ValidatingAdmissionPolicy restricting externalIPs to the setup's Services and the nodes' addresses",
		"forms":         "docs/after-externalips.md",
	}
	if len(seen) > 0 {
		ev["apiWarningsSeen"] = seen
	}
	f := engine.Finding{Code: "LA106-DEPRECATED", Severity: engine.SeverityInfo, Object: "spec.externalIPs (" + kubeobj.ServiceRef(s.ProxyService) + ", " + kubeobj.ServiceRef(s.DNSService) + ")",
		Message: "spec.externalIPs is deprecated since Kubernetes 1.36: every create or update of these Services returns the warning \"spec.externalIPs is deprecated and may no longer be implemented in some clusters\". " +
			"It still works; kube-proxy's feature gate AllowServiceExternalIPs is planned to default to off in 1.40 and the implementation to go in 1.43, so plan the move to a form that keeps the nodes' own addresses (the proxy and lan-dns as DaemonSets with hostPorts, k3s ServiceLB, Cilium node IPAM, or Gateway API on one of those; MetalLB hands out addresses of its own, not the nodes'): docs/after-externalips.md. " +
			"CIS Kubernetes Benchmark 1.2.3 (kube-bench: \"Ensure that the --DenyServiceExternalIPs is set\", Manual) asks for the DenyServiceExternalIPs admission plugin, which refuses every new or changed externalIP, this setup's included: turning it on breaks the next update of these Services. Until the move, the ValidatingAdmissionPolicy LA106 checks for (and prints when missing) is the compensating control: it refuses externalIPs to every Service but these two and only on the nodes' addresses, which closes CVE-2020-8554, the risk 1.2.3 addresses",
		Evidence: ev}
	if minor, ok := kubeMinor(s.ServerVersion); ok && minor >= 40 {
		f.Code, f.Severity = "LA106-GATE-DEFAULT-OFF", engine.SeverityWarn
		f.Message = fmt.Sprintf("this cluster runs Kubernetes 1.%d, where kube-proxy's AllowServiceExternalIPs is planned to be off by default: unless kube-proxy enables it, externalIPs are not programmed at all", minor)
		f.Remediation = "# AllowServiceExternalIPs: true in kube-proxy's configuration keeps externalIPs working, until 1.43\n" + kubeProxyGatePatch(s.KubeProxyConfig)
	}
	return f
}

var gitMinor = regexp.MustCompile(`^v?1\.(\d+)`)

func kubeMinor(v string) (int, bool) {
	m := gitMinor.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}
