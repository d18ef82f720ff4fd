package config

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// extraProxyPortFindings warns about the proxy Service's ports beyond 80 and 443 that no router
// LA107 judges serves (see proxy_ports.go): Traefik's internal entry point (its API and
// dashboard, ping, metrics: traefik/traefik v3.7.9 pkg/config/static/static_config.go
// SetEffectiveConfiguration), an entry point no router serves, no entry point at all, or a port
// of an implementation whose listeners are not modelled (HAProxy's stats and pprof, Istio's
// status port 15021). kube-proxy captures each on the node addresses. The fix keeps them
// inside the cluster on a Service of their own, as LA103-EXTRA-PORT's does.
func extraProxyPortFindings(s *kube.Setup) []engine.Finding {
	var flagged []extraProxyPort
	var why []string
	for _, p := range extraProxyPorts(s) {
		if judgedByRouters(s, p) {
			continue
		}
		flagged = append(flagged, p)
		why = append(why, p.Label()+" -> "+extraPortReach(s, p))
	}
	if len(flagged) == 0 {
		return nil
	}
	svc := s.ProxyService
	idx := make([]int, 0, len(flagged))
	labels := make([]string, 0, len(flagged))
	for _, p := range flagged {
		idx, labels = append(idx, p.Index), append(labels, p.Label())
	}
	return []engine.Finding{{Code: "LA102-EXTRA-PORT", Severity: engine.SeverityWarn, Object: kubeobj.ServiceRef(svc),
		Message: fmt.Sprintf("the proxy Service also carries %s on the node addresses: kube-proxy captures every port of a Service on its externalIPs, so the whole LAN reaches what listens there (%s); the setup needs 80/TCP and 443/TCP only",
			strings.Join(labels, ", "), strings.Join(why, "; ")),
		Evidence:    map[string]any{"ports": labels, "externalIPs": svc.Spec.ExternalIPs, "reaches": why},
		Remediation: movePortsInside(svc, idx)}}
}

// extraPortReach says what a port reaches.
func extraPortReach(s *kube.Setup, p extraProxyPort) string {
	switch {
	case !s.Traefik.Found && s.Implementation.Name != proxyroute.ImplUnknown:
		return fmt.Sprintf("%s of %s, whose listeners there are not modelled", p.Target, s.Implementation.String())
	case !s.Traefik.Found:
		return p.Target + " of the proxy's pods, whose listeners are not known"
	case p.EntryPoint == nil && !s.Traefik.EntryPointsKnown:
		return p.Target + ": the proxy's entry points are not known (" + s.Traefik.EntryPointsWhy + ")"
	case p.EntryPoint == nil:
		return p.Target + ", where no entry point of Traefik's arguments listens (a configuration file may define one)"
	}
	e := p.EntryPoint
	if internal := s.Traefik.InternalServices(e.Name); len(internal) > 0 {
		out := fmt.Sprintf("Traefik's entry point %s, where Traefik itself serves %s", e.Label(), strings.Join(internal, ", "))
		if users := s.EntryPointUsers(e.Name); len(users) > 0 {
			out += ", and " + strings.Join(users, ", ")
		}
		return out
	}
	if strings.EqualFold(e.Name, "traefik") {
		users := s.EntryPointUsers(e.Name)
		if len(users) == 0 {
			return fmt.Sprintf("Traefik's internal entry point %s (its API, dashboard, ping and metrics when enabled), which no router serves", e.Label())
		}
		return fmt.Sprintf("Traefik's internal entry point %s (its API, dashboard, ping and metrics), served by %s", e.Label(), strings.Join(users, ", "))
	}
	return fmt.Sprintf("Traefik's entry point %s, which no router serves: it opens the proxy to the LAN for nothing", e.Label())
}
