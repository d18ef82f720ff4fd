package config

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// DNSService is LA103: the DNS Service answers on 53/UDP and 53/TCP (large answers and
// resolvers such as systemd-resolved retry over TCP), each port reaches the port CoreDNS's
// container listens on, and there are ready endpoints.
func DNSService(env *Env) engine.Check {
	return check(env, "LA103", dnsService)
}

func dnsService(s *kube.Setup) engine.Outcome {
	svc := s.DNSService
	obj := kubeobj.ServiceRef(svc)
	spec := dnsPodSpec(s)
	var findings []engine.Finding
	for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
		sp, ok := kubeobj.ServicePortFor(svc, 53, proto)
		if !ok {
			why := "workstations send their queries over UDP: nothing answers them"
			if proto == corev1.ProtocolTCP {
				why = "answers too large for UDP are retried over TCP, and some resolvers (systemd-resolved) fall back to TCP: those queries fail"
			}
			target, from := dnsListenPort(s, spec, proto)
			findings = append(findings, engine.Finding{
				Code: map[corev1.Protocol]string{corev1.ProtocolUDP: "LA103-NO-53-UDP", corev1.ProtocolTCP: "LA103-NO-53-TCP"}[proto], Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("no port 53/%s: %s", proto, why),
				Evidence:    map[string]any{"ports": kubeobj.DescribePorts(svc), "coreDNSPort": target, "coreDNSPortFrom": from},
				Remediation: kube.ManagedNote(svc, "Service", "spec.ports") + addPortPatch(svc, "dns-"+strings.ToLower(string(proto)), 53, proto, target),
			})
			continue
		}
		t := kubeobj.ResolveTargetPort(sp, spec)
		if t.Problem == "" || spec == nil {
			continue // without pods, the endpoints say which port: nothing to compare
		}
		findings = append(findings, engine.Finding{
			Code: "LA103-TARGET-PORT", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("port 53/%s: %s; queries reach a port where CoreDNS does not listen", proto, t.Problem),
			Evidence:    map[string]any{"port": fmt.Sprintf("53/%s", proto), "targetPort": sp.TargetPort.String(), "endpointPorts": kubeobj.SlicePorts(s.EndpointSlices[svc.Namespace+"/"+svc.Name])},
			Remediation: kube.ManagedNote(svc, "Service", "spec.ports") + targetPortPatch(svc, sp, dnsTarget(s, spec, proto)),
		})
	}
	findings = append(findings, endpointFindings(s, "LA103", svc, s.DNSPods, "DNS")...)
	findings = append(findings, reachFindings("LA103", "DNS", obj, s.DNSReachable())...)
	findings = append(findings, localPolicyFindings(s, "LA103", svc)...)
	findings = append(findings, extraDNSPortFindings(svc)...)
	return engine.Partial("LA103", findings, serviceUnread(s, "LA103", svc))
}

// dnsPodSpec is the DNS workload's pod template, else the spec of its first pod.
func dnsPodSpec(s *kube.Setup) *corev1.PodSpec {
	var tmpl *corev1.PodTemplateSpec
	if s.DNSWorkload != nil {
		tmpl = &s.DNSWorkload.Spec.Template
	}
	return kubeobj.PodSpecOf(tmpl, s.DNSPods)
}

// dnsListenPort is the port CoreDNS listens on for proto, and where that was read. CoreDNS
// serves every server block on the same port over UDP and TCP (coredns core/dnsserver
// server.go: Listen and ListenPacket on the block's address), so the port that the other
// protocol's 53 reaches is the one: the CoreDNS chart's 53/UDP -> 1053 means 53/TCP -> 1053
// too. Else a container port declared for proto, then for the other protocol; else the
// Corefile's only server port; else 53.
func dnsListenPort(s *kube.Setup, spec *corev1.PodSpec, proto corev1.Protocol) (int32, string) {
	other := corev1.ProtocolTCP
	if proto == corev1.ProtocolTCP {
		other = corev1.ProtocolUDP
	}
	if sp, ok := kubeobj.ServicePortFor(s.DNSService, 53, other); ok {
		if t := kubeobj.ResolveTargetPort(sp, spec); t.Port > 0 {
			return t.Port, fmt.Sprintf("the target of port 53/%s", other)
		}
	}
	for _, p := range []corev1.Protocol{proto, other} {
		if port, ok := dnsContainerPort(spec, p); ok {
			return port, fmt.Sprintf("the declared container port %d/%s", port, p)
		}
	}
	if s.Corefile != nil {
		if ports := s.Corefile.Ports(); len(ports) == 1 {
			if n, err := strconv.ParseInt(ports[0], 10, 32); err == nil && n > 0 {
				return int32(n), "the Corefile's server port"
			}
		}
	}
	return 53, "the default DNS port (no other port is known)"
}

// dnsContainerPort is the first container port declared for proto.
func dnsContainerPort(spec *corev1.PodSpec, proto corev1.Protocol) (int32, bool) {
	if spec != nil {
		for _, c := range spec.Containers {
			for _, cp := range c.Ports {
				if kubeobj.Protocol(cp.Protocol) == proto {
					return cp.ContainerPort, true
				}
			}
		}
	}
	return 0, false
}

func dnsTarget(s *kube.Setup, spec *corev1.PodSpec, proto corev1.Protocol) int32 {
	port, _ := dnsListenPort(s, spec, proto)
	return port
}
