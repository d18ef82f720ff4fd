package config

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// DNSService is LA103: the DNS Service answers on 53/UDP and 53/TCP (large answers and
// resolvers such as systemd-resolved retry over TCP), each port reaches the port CoreDNS's
// container listens on, and there are ready endpoints.
func DNSService(env *Env) engine.Check {
	return check(env, "LA103", dnsService)
}

func dnsService(s *kube.Setup) engine.Outcome {
	svc := s.DNSService
	obj := kube.ServiceRef(svc)
	spec := dnsPodSpec(s)
	var findings []engine.Finding
	for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
		sp, ok := kube.ServicePortFor(svc, 53, proto)
		if !ok {
			why := "workstations send their queries over UDP: nothing answers them"
			if proto == corev1.ProtocolTCP {
				why = "answers too large for UDP are retried over TCP, and some resolvers (systemd-resolved) fall back to TCP: those queries fail"
			}
			findings = append(findings, engine.Finding{
				Code: map[corev1.Protocol]string{corev1.ProtocolUDP: "LA103-NO-53-UDP", corev1.ProtocolTCP: "LA103-NO-53-TCP"}[proto], Severity: engine.SeverityFail, Object: obj,
				Message:  fmt.Sprintf("no port 53/%s: %s", proto, why),
				Evidence: map[string]any{"ports": kube.DescribePorts(svc)},
				Remediation: remedy.JSONPatch(svc.Namespace, "service", svc.Name, remedy.PatchOp{Op: "add", Path: "/spec/ports/-",
					Value: map[string]any{"name": "dns-" + strings.ToLower(string(proto)), "port": 53, "protocol": string(proto), "targetPort": dnsContainerPort(spec, proto)}}),
			})
			continue
		}
		t := kube.ResolveTargetPort(sp, spec)
		if t.Problem == "" || spec == nil {
			continue // without pods, the endpoints say which port: nothing to compare
		}
		findings = append(findings, engine.Finding{
			Code: "LA103-TARGET-PORT", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("port 53/%s: %s; queries reach a port where CoreDNS does not listen", proto, t.Problem),
			Evidence:    map[string]any{"port": fmt.Sprintf("53/%s", proto), "targetPort": sp.TargetPort.String(), "endpointPorts": kube.SlicePorts(s.EndpointSlices[svc.Namespace+"/"+svc.Name])},
			Remediation: targetPortPatch(svc, sp, dnsContainerPort(spec, proto)),
		})
	}
	findings = append(findings, endpointFindings(s, "LA103", svc, s.DNSPods, "DNS")...)
	findings = append(findings, localPolicyFindings(s, "LA103", svc)...)
	return engine.Partial("LA103", findings, s.UnreadReason(kube.ReadKeysIn(svc.Namespace, "pods", "deployments.apps", "endpointslices.discovery.k8s.io")...))
}

// dnsPodSpec is the DNS workload's pod template, else the spec of its first pod.
func dnsPodSpec(s *kube.Setup) *corev1.PodSpec {
	var tmpl *corev1.PodTemplateSpec
	if s.DNSWorkload != nil {
		tmpl = &s.DNSWorkload.Spec.Template
	}
	return kube.PodSpecOf(tmpl, s.DNSPods)
}

// dnsContainerPort is the container port declared for proto, else 53.
func dnsContainerPort(spec *corev1.PodSpec, proto corev1.Protocol) int32 {
	if spec != nil {
		for _, c := range spec.Containers {
			for _, cp := range c.Ports {
				if kube.Protocol(cp.Protocol) == proto {
					return cp.ContainerPort
				}
			}
		}
	}
	return 53
}
