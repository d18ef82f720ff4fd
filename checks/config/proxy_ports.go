package config

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// The proxy Service's ports beyond the setup's 80 and 443: kube-proxy captures every port of a
// Service on each of its externalIPs (kubernetes/kubernetes pkg/proxy/iptables/proxier.go
// syncProxyRules, "Capture externalIPs": one rule per Service port), so each of them opens
// what listens behind it to the whole LAN. Which check judges one depends on what it reaches:
// a Traefik entry point whose routers are served (LA107 judges those routers, TCP and UDP ones
// included), or anything else (LA102: Traefik's own API, dashboard, ping or metrics, an entry
// point no router serves, a port of an implementation whose routes are not modelled).

// extraProxyPort is one port of the proxy Service beyond 80 and 443.
type extraProxyPort struct {
	Index int
	Port  corev1.ServicePort
	// Target describes where it leads ("container port 8080 (traefik)").
	Target string
	// EntryPoint is the Traefik entry point it reaches (nil when none, or not Traefik).
	EntryPoint *proxyroute.EntryPoint
}

// Label is "8080/TCP".
func (p extraProxyPort) Label() string {
	return fmt.Sprintf("%d/%s", p.Port.Port, kubeobj.Protocol(p.Port.Protocol))
}

// setupProxyPort: 80 and 443 are the setup's (443/UDP is HTTP/3 of the same routers).
func setupProxyPort(p corev1.ServicePort) bool { return p.Port == 80 || p.Port == 443 }

// extraProxyPorts lists the proxy Service's ports beyond 80 and 443 on the node addresses, each
// with the Traefik entry point it reaches.
func extraProxyPorts(s *kube.Setup) []extraProxyPort {
	svc := s.ProxyService
	if svc == nil || len(kubeobj.ExternalAddrs(svc)) == 0 {
		return nil
	}
	var tmpl *corev1.PodTemplateSpec
	if s.ProxyWorkload != nil {
		tmpl = &s.ProxyWorkload.Spec.Template
	}
	spec := kubeobj.PodSpecOf(tmpl, s.ProxyPods)
	var out []extraProxyPort
	for i, sp := range svc.Spec.Ports {
		if setupProxyPort(sp) {
			continue
		}
		p := extraProxyPort{Index: i, Port: sp, Target: "target port " + sp.TargetPort.String()}
		t := kubeobj.ResolveTargetPort(sp, spec)
		if t.Port != 0 {
			p.Target = fmt.Sprintf("container port %d", t.Port)
			if sp.TargetPort.String() != strconv.Itoa(int(t.Port)) {
				p.Target += " (" + sp.TargetPort.String() + ")"
			}
		}
		if s.Traefik.Found {
			for k := range s.Traefik.EntryPoints {
				e := s.Traefik.EntryPoints[k]
				if t.Port != 0 && e.Port == t.Port && e.Protocol == kubeobj.Protocol(sp.Protocol) {
					p.EntryPoint = &e
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// judgedByRouters reports whether the routers LA107 judges serve the port: a Traefik entry
// point with served routers and nothing of Traefik's own.
func judgedByRouters(s *kube.Setup, p extraProxyPort) bool {
	if p.EntryPoint == nil || len(s.Traefik.InternalServices(p.EntryPoint.Name)) > 0 || strings.EqualFold(p.EntryPoint.Name, "traefik") {
		return false
	}
	return len(s.EntryPointUsers(p.EntryPoint.Name)) > 0
}
