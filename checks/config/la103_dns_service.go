package checks

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// DNSService is LA103: the DNS Service answers on 53/UDP and 53/TCP (large answers and
// resolvers such as systemd-resolved retry over TCP), each port reaches the port CoreDNS's
// container listens on, and there are ready endpoints.
func DNSService(env *Env) engine.Check {
	return engine.Check{
		ID:        "LA103",
		Title:     "The DNS Service exposes 53/UDP and 53/TCP to the container port and has ready endpoints",
		DependsOn: []string{"LA001"},
		Run:       func(ctx context.Context) engine.Outcome { return dnsService(env) },
	}
}

func dnsService(env *Env) engine.Outcome {
	if o, stop := noSetup(env); stop {
		return o
	}
	s := env.Setup
	svc := s.DNSService
	obj := svcRef(svc)
	var tmpl *corev1.PodTemplateSpec
	if s.DNSWorkload != nil {
		tmpl = &s.DNSWorkload.Spec.Template
	}
	spec := podSpecOf(tmpl, s.DNSPods)
	var findings []engine.Finding
	for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
		sp, ok := servicePortFor(svc, 53, proto)
		if !ok {
			why := "workstations send their queries over UDP: nothing answers them"
			if proto == corev1.ProtocolTCP {
				why = "answers too large for UDP are retried over TCP, and some resolvers (systemd-resolved) fall back to TCP: those queries fail"
			}
			findings = append(findings, engine.Finding{
				Severity: engine.SeverityFail, Object: obj,
				Message:  fmt.Sprintf("no port 53/%s: %s", proto, why),
				Evidence: map[string]any{"ports": describePorts(svc)},
				Remediation: fmt.Sprintf("kubectl -n %s patch service %s --type=json -p '[{\"op\":\"add\",\"path\":\"/spec/ports/-\",\"value\":{\"name\":\"dns-%s\",\"port\":53,\"protocol\":\"%s\",\"targetPort\":%s}}]'",
					svc.Namespace, svc.Name, strings.ToLower(string(proto)), proto, dnsContainerPort(spec, proto)),
			})
			continue
		}
		t := resolveTargetPort(sp, spec)
		if t.Problem == "" || spec == nil {
			continue // without pods, the endpoints say which port: nothing to compare
		}
		findings = append(findings, engine.Finding{
			Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("port 53/%s: %s; queries reach a port where CoreDNS does not listen", proto, t.Problem),
			Evidence:    map[string]any{"port": fmt.Sprintf("53/%s", proto), "targetPort": sp.TargetPort.String(), "endpointPorts": slicePorts(s.EndpointSlices[svc.Namespace+"/"+svc.Name])},
			Remediation: targetPortPatch(svc, sp, dnsContainerPort(spec, proto)),
		})
	}
	findings = append(findings, endpointFindings(env, svc, s.DNSPods, "DNS")...)
	findings = append(findings, localPolicyFindings(env, svc)...)
	return partialOutcome(findings, unreadReason(env, readsOf(svc.Namespace, "pods", "deployments.apps", "endpointslices.discovery.k8s.io")...))
}

func servicePortFor(svc *corev1.Service, port int32, proto corev1.Protocol) (corev1.ServicePort, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Port == port && protocolOrTCP(p.Protocol) == proto {
			return p, true
		}
	}
	return corev1.ServicePort{}, false
}

// dnsContainerPort is the container port declared for proto, as a JSON value, else 53.
func dnsContainerPort(spec *corev1.PodSpec, proto corev1.Protocol) string {
	if spec != nil {
		for _, c := range spec.Containers {
			for _, cp := range c.Ports {
				if protocolOrTCP(cp.Protocol) == proto {
					return fmt.Sprint(cp.ContainerPort)
				}
			}
		}
	}
	return "53"
}
