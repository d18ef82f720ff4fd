package checks

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// ProxyService is LA102: the proxy Service exposes 80 and 443 on its externalIPs and reaches
// ready pods. One replica works, but the LAN path is then no more available than the VPN one.
func ProxyService(env *Env) engine.Check {
	return engine.Check{
		ID:        "LA102",
		Title:     "The proxy Service exposes 80/443 and reaches ready pods",
		DependsOn: []string{"LA001"},
		Run:       func(ctx context.Context) engine.Outcome { return proxyService(env) },
	}
}

func proxyService(env *Env) engine.Outcome {
	if o, stop := noSetup(env); stop {
		return o
	}
	s := env.Setup
	svc := s.ProxyService
	obj := svcRef(svc)
	var findings []engine.Finding
	var spec *corev1.PodSpec
	if s.ProxyWorkload != nil {
		spec = podSpecOf(&s.ProxyWorkload.Spec.Template, s.ProxyPods)
	} else {
		spec = podSpecOf(nil, s.ProxyPods)
	}

	for _, want := range []struct {
		port int32
		sev  engine.Severity
		why  string
	}{
		{443, engine.SeverityFail, "HTTPS on the LAN addresses is the point of the setup"},
		{80, engine.SeverityWarn, "http:// links and the redirect to HTTPS fail on the LAN path"},
	} {
		sp, ok := tcpPort(svc, want.port)
		if !ok {
			findings = append(findings, engine.Finding{
				Severity: want.sev, Object: obj,
				Message:     fmt.Sprintf("no TCP port %d: %s", want.port, want.why),
				Evidence:    map[string]any{"ports": describePorts(svc)},
				Remediation: fmt.Sprintf("kubectl -n %s patch service %s --type=json -p '[{\"op\":\"add\",\"path\":\"/spec/ports/-\",\"value\":{\"name\":\"port-%d\",\"port\":%d,\"protocol\":\"TCP\",\"targetPort\":%s}}]'", svc.Namespace, svc.Name, want.port, want.port, proxyTargetFor(want.port, spec)),
			})
			continue
		}
		if t := resolveTargetPort(sp, spec); spec != nil && t.Problem != "" && t.Port == 0 {
			findings = append(findings, engine.Finding{
				Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("port %d: %s, so kube-proxy has no backend port for it", want.port, t.Problem),
				Evidence:    map[string]any{"port": want.port, "targetPort": sp.TargetPort.String()},
				Remediation: targetPortPatch(svc, sp, proxyTargetFor(want.port, spec)),
			})
		}
	}
	findings = append(findings, endpointFindings(env, svc, s.ProxyPods, "proxy")...)
	findings = append(findings, localPolicyFindings(env, svc)...)
	if f, ok := singleReplica(s.ProxyWorkload, s.ProxyPods, obj); ok {
		findings = append(findings, f)
	}
	return partialOutcome(findings, unreadReason(env, readsOf(svc.Namespace, "pods", "deployments.apps", "endpointslices.discovery.k8s.io")...))
}

// proxyTargetFor guesses the pod port for a missing Service port: Traefik's entry point
// names, then the usual ones, else the same number.
func proxyTargetFor(port int32, spec *corev1.PodSpec) string {
	names := []string{"websecure", "https"}
	if port == 80 {
		names = []string{"web", "http"}
	}
	if spec != nil {
		for _, n := range names {
			for _, c := range spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == n {
						return fmt.Sprintf("%q", n)
					}
				}
			}
		}
	}
	return fmt.Sprint(port)
}

func tcpPort(svc *corev1.Service, port int32) (corev1.ServicePort, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Port == port && protocolOrTCP(p.Protocol) == corev1.ProtocolTCP {
			return p, true
		}
	}
	return corev1.ServicePort{}, false
}

func describePorts(svc *corev1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%d/%s -> %s", p.Port, protocolOrTCP(p.Protocol), p.TargetPort.String()))
	}
	return out
}

// targetPortPatch points the Service port at value (a JSON number or quoted name), as a JSON
// patch on the port's index.
func targetPortPatch(svc *corev1.Service, sp corev1.ServicePort, value string) string {
	idx := 0
	for i, p := range svc.Spec.Ports {
		if p.Port == sp.Port && protocolOrTCP(p.Protocol) == protocolOrTCP(sp.Protocol) {
			idx = i
		}
	}
	return fmt.Sprintf("kubectl -n %s patch service %s --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/ports/%d/targetPort\",\"value\":%s}]'", svc.Namespace, svc.Name, idx, value)
}

// endpointFindings checks that the Service selects pods and has ready endpoints.
func endpointFindings(env *Env, svc *corev1.Service, pods []corev1.Pod, role string) []engine.Finding {
	obj := svcRef(svc)
	key := svc.Namespace + "/" + svc.Name
	eps, sliced := env.Setup.EndpointSlices[key]
	ready := readyEndpoints(eps)
	var out []engine.Finding
	if len(svc.Spec.Selector) == 0 {
		out = append(out, engine.Finding{Severity: engine.SeverityWarn, Object: obj,
			Message:     "the Service has no selector: its endpoints are maintained by hand and do not follow the pods",
			Remediation: fmt.Sprintf("kubectl -n %s get endpointslices -l kubernetes.io/service-name=%s -o wide", svc.Namespace, svc.Name)})
	} else if len(pods) == 0 && env.Setup.Unread(readsOf(svc.Namespace, "pods")[0]) == nil {
		sel := labels.SelectorFromSet(svc.Spec.Selector).String()
		out = append(out, engine.Finding{Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("the selector %s matches no pod: nothing serves the %s on the LAN addresses", sel, role),
			Evidence:    map[string]any{"selector": sel},
			Remediation: fmt.Sprintf("kubectl -n %s get pods --show-labels   # compare with: %s", svc.Namespace, sel)})
		return out
	}
	if !sliced {
		return out // unread: partialOutcome says so
	}
	if len(ready) == 0 {
		var states []string
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s on %s: %s", p.Name, p.Spec.NodeName, podState(&p)))
		}
		out = append(out, engine.Finding{Severity: engine.SeverityFail, Object: obj,
			Message:  fmt.Sprintf("no ready endpoint: the %s answers nothing on the LAN addresses", role),
			Evidence: map[string]any{"pods": states, "endpointSlices": len(eps)},
			Remediation: fmt.Sprintf("kubectl -n %[1]s get pods -l %[2]s -o wide\nkubectl -n %[1]s describe endpointslices -l kubernetes.io/service-name=%[3]s",
				svc.Namespace, labels.SelectorFromSet(svc.Spec.Selector).String(), svc.Name)})
	}
	return out
}

func podState(p *corev1.Pod) string {
	if podIsReady(p) {
		return "ready"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return "not ready (" + w.Reason + ")"
		}
	}
	return "not ready (" + string(p.Status.Phase) + ")"
}

// localPolicyFindings: with externalTrafficPolicy Local, kube-proxy sends traffic for an
// externalIP only to endpoints on the node that received it; a node carrying an address
// without a ready endpoint drops it.
func localPolicyFindings(env *Env, svc *corev1.Service) []engine.Finding {
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil
	}
	eps, ok := env.Setup.EndpointSlices[svc.Namespace+"/"+svc.Name]
	if !ok {
		return nil
	}
	withEndpoint := map[string]bool{}
	for _, e := range readyEndpoints(eps) {
		withEndpoint[e.Node] = true
	}
	var out []engine.Finding
	for _, ip := range svc.Spec.ExternalIPs {
		f := readAddr(ip)
		if !f.Addr.IsValid() {
			continue
		}
		for _, n := range nodesWithInternalIP(env.Setup.Nodes, f.Addr) {
			if withEndpoint[n.Name] {
				continue
			}
			out = append(out, engine.Finding{
				Severity: engine.SeverityFail, Object: fmt.Sprintf("%s (%s)", n.Name, f.Addr),
				Message:     fmt.Sprintf("%s has externalTrafficPolicy Local and no ready pod on %s: connections to %s are dropped", svcRef(svc), n.Name, f.Addr),
				Evidence:    map[string]any{"externalTrafficPolicy": "Local", "nodesWithEndpoints": keysOf(withEndpoint)},
				Remediation: fmt.Sprintf("kubectl -n %s patch service %s --type=merge -p '{\"spec\":{\"externalTrafficPolicy\":\"Cluster\"}}'   # or run a pod on every node that carries an address", svc.Namespace, svc.Name),
			})
		}
	}
	return out
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// singleReplica is the info that one proxy pod gives the LAN path no availability gain.
func singleReplica(dep *appsv1.Deployment, pods []corev1.Pod, obj string) (engine.Finding, bool) {
	replicas := int32(len(pods))
	if dep != nil {
		replicas = 1
		if dep.Spec.Replicas != nil {
			replicas = *dep.Spec.Replicas
		}
	}
	if replicas != 1 {
		return engine.Finding{}, false
	}
	f := engine.Finding{Severity: engine.SeverityInfo, Object: obj,
		Message:  "one proxy replica: the LAN path is no more available than the VPN path (a restart or a node failure cuts both)",
		Evidence: map[string]any{"replicas": replicas}}
	if dep != nil {
		f.Remediation = fmt.Sprintf("kubectl -n %s scale deployment/%s --replicas=2", dep.Namespace, dep.Name)
	}
	return f, true
}
