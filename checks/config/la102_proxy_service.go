package config

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ProxyService is LA102: the proxy Service exposes 80 and 443 on its externalIPs and reaches
// ready pods. One replica works, but the LAN path is then no more available than the VPN one.
func ProxyService(env *Env) engine.Check {
	return check(env, "LA102", proxyService)
}

func proxyService(s *kube.Setup) engine.Outcome {
	svc := s.ProxyService
	obj := kubeobj.ServiceRef(svc)
	var findings []engine.Finding
	var tmpl *corev1.PodTemplateSpec
	if s.ProxyWorkload != nil {
		tmpl = &s.ProxyWorkload.Spec.Template
	}
	spec := kubeobj.PodSpecOf(tmpl, s.ProxyPods)

	for _, want := range []struct {
		port int32
		sev  engine.Severity
		code string
		why  string
	}{
		{443, engine.SeverityFail, "LA102-NO-443", "HTTPS on the LAN addresses is the point of the setup"},
		{80, engine.SeverityWarn, "LA102-NO-80", "http:// links and the redirect to HTTPS fail on the LAN path"},
	} {
		sp, ok := kubeobj.ServicePortFor(svc, want.port, corev1.ProtocolTCP)
		if !ok {
			findings = append(findings, engine.Finding{
				Code: want.code, Severity: want.sev, Object: obj,
				Message:     fmt.Sprintf("no TCP port %d: %s", want.port, want.why),
				Evidence:    map[string]any{"ports": kubeobj.DescribePorts(svc)},
				Remediation: kube.ManagedNote(svc, "Service", "spec.ports") + addPortPatch(svc, proxyPortName(want.port), want.port, corev1.ProtocolTCP, proxyTargetFor(want.port, spec)),
			})
			continue
		}
		if t := kubeobj.ResolveTargetPort(sp, spec); spec != nil && t.Problem != "" && t.Port == 0 {
			findings = append(findings, engine.Finding{
				Code: "LA102-TARGET-PORT", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("port %d: %s, so kube-proxy has no backend port for it", want.port, t.Problem),
				Evidence:    map[string]any{"port": want.port, "targetPort": sp.TargetPort.String()},
				Remediation: kube.ManagedNote(svc, "Service", "spec.ports") + targetPortPatch(svc, sp, proxyTargetFor(want.port, spec)),
			})
		}
	}
	findings = append(findings, endpointFindings(s, "LA102", svc, s.ProxyPods, "proxy")...)
	findings = append(findings, reachFindings("LA102", "proxy", obj, s.ProxyReachable())...)
	findings = append(findings, localPolicyFindings(s, "LA102", svc)...)
	findings = append(findings, extraProxyPortFindings(s)...)
	if f, ok := singleReplica(s.ProxyWorkload, s.ProxyPods, obj); ok {
		findings = append(findings, f)
	}
	return engine.Partial("LA102", findings, serviceUnread(s, "LA102", svc))
}

// proxyPortName names a port as Traefik's chart does (web, websecure).
func proxyPortName(port int32) string {
	if port == 80 {
		return "web"
	}
	return "websecure"
}

// proxyTargetFor guesses the pod port for a missing Service port: Traefik's entry point
// names, then the usual ones, else the same number (a JSON string or number).
func proxyTargetFor(port int32, spec *corev1.PodSpec) any {
	names := []string{"websecure", "https"}
	if port == 80 {
		names = []string{"web", "http"}
	}
	if spec != nil {
		for _, n := range names {
			for _, c := range spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == n {
						return n
					}
				}
			}
		}
	}
	return port
}

// singleReplica is the info that one proxy pod gives the LAN path no availability gain.
func singleReplica(dep *appsv1.Deployment, pods []corev1.Pod, obj string) (engine.Finding, bool) {
	replicas := len(pods)
	if dep != nil {
		replicas = 1 // the API's default
		if dep.Spec.Replicas != nil {
			replicas = int(*dep.Spec.Replicas)
		}
	}
	if replicas != 1 {
		return engine.Finding{}, false
	}
	f := engine.Finding{Code: "LA102-ONE-REPLICA", Severity: engine.SeverityInfo, Object: obj,
		Message:  "one proxy replica: the LAN path is no more available than the VPN path (a restart or a node failure cuts both)",
		Evidence: map[string]any{"replicas": replicas}}
	if dep != nil {
		f.Remediation = remedy.Kubectl(dep.Namespace, "scale", "deployment/"+dep.Name, "--replicas=2")
	}
	return f, true
}
