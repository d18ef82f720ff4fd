package config

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// LA107 on Traefik's TCP and UDP routers (discovery's StreamRoutes, modelled in
// pkg/kube/proxyroute/stream.go from traefik/traefik v3.7.9): a router served on an entry point
// the node addresses reach forwards the LAN's connections to its backend before any HTTP
// router, so no authentication middleware can apply. It is LAN exposure, judged like an HTTP
// route without authentication: a WARN unless reviewed.

// judgeStream is LA107's verdict on one TCP or UDP router.
func judgeStream(s *kube.Setup, r proxyroute.StreamRoute) []engine.Finding {
	via := make([]string, 0, len(r.Via))
	var lan []string
	for _, e := range r.Via {
		via = append(via, e.Label())
		lan = append(lan, e.LAN...)
	}
	ev := map[string]any{"match": r.Match, "protocol": string(r.Protocol), "reach": string(r.Reach), "entryPoints": via, "backends": backendNames(r.Backends)}
	if r.TLS != "" {
		ev["tls"] = r.TLS
	}
	if len(r.Middlewares) > 0 {
		ev["middlewares"] = r.Middlewares
	}
	switch {
	case !r.Served:
		return []engine.Finding{{Code: "LA107-NOT-SERVED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("not served by the proxy (%s): it exposes nothing on the LAN addresses", r.NotServed)}}
	case r.Reach == proxyroute.ReachNotLAN:
		return []engine.Finding{{Code: "LA107-NOT-ON-LAN", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: "not reachable from the LAN: " + r.ReachWhy}}
	case r.Reviewed:
		return []engine.Finding{{Code: "LA107-REVIEWED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("a %s router on the LAN addresses, reviewed for the LAN (%s=reviewed)", r.Protocol, proxyroute.ReviewedAnnotation)}}
	}
	target := strings.Join(backendNames(r.Backends), ", ")
	if target == "" {
		target = "its backend"
	}
	msg := fmt.Sprintf("Traefik forwards %s to %s through %s, reached on the node addresses by %s: a %s router takes the connection before any HTTP router, so no authentication middleware applies and the whole LAN reaches %s",
		r.Hosts(), target, strings.Join(via, ", "), strings.Join(lan, ", "), r.Protocol, target)
	if r.TLS == "passthrough" {
		msg += " (TLS passes through to the backend: only its own authentication protects it)"
	}
	if len(r.Middlewares) > 0 {
		msg += fmt.Sprintf("; its TCP middlewares (%s) filter by source address, which kube-proxy rewrites to a node's with externalTrafficPolicy Cluster", strings.Join(r.Middlewares, ", "))
	}
	if r.Reach == proxyroute.ReachUnknown {
		msg = fmt.Sprintf("Traefik forwards %s to %s, and whether the LAN reaches it cannot be told (%s): if it does, no authentication middleware applies and the whole LAN reaches %s",
			r.Hosts(), target, r.ReachWhy, target)
	}
	return []engine.Finding{{Code: "LA107-TCP-UDP-ROUTE", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
		Message: msg, Remediation: streamRemedy(s, r)}}
}

func backendNames(bs []proxyroute.Backend) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		n := b.Name
		if b.Namespace != "" {
			n = b.Namespace + "/" + b.Name
		}
		out = append(out, b.Kind+" "+n)
	}
	return out
}

// streamRemedy: when every port of the proxy Service that reaches the router's entry points is
// an extra one (beyond 80/443), keep those ports inside the cluster (the router then serves only
// in-cluster clients); else the router shares the setup's ports, and only its owner can say
// whether the LAN may reach it.
func streamRemedy(s *kube.Setup, r proxyroute.StreamRoute) string {
	review := "# or, if the LAN may reach it (the backend authenticates on its own):\n" +
		remedy.Kubectl(r.Namespace, "annotate", strings.ToLower(r.Kind), r.Name, proxyroute.ReviewedAnnotation+"=reviewed")
	var idx []int
	onlyExtra := r.Reach == proxyroute.ReachLAN
	for _, e := range r.Via {
		for _, sp := range s.ProxyService.Spec.Ports {
			if onEntryPoint(s, sp, e) && setupProxyPort(sp) {
				onlyExtra = false
			}
		}
		for _, p := range extraProxyPorts(s) {
			if p.EntryPoint != nil && p.EntryPoint.Name == e.Name && !slices.Contains(idx, p.Index) {
				idx = append(idx, p.Index)
			}
		}
		if slices.ContainsFunc(e.LAN, func(l string) bool { return !strings.HasSuffix(l, " of "+kubeobj.ServiceRef(s.ProxyService)) }) {
			onlyExtra = false // a hostPort, hostNetwork or another Service: not fixed here
		}
	}
	if !onlyExtra || len(idx) == 0 {
		return remedy.Commentf("# a diagnosis: %s shares the entry points of the setup's ports; move it to an entry point no Service port on the node addresses reaches", r.Object) +
			"\n" + review
	}
	slices.Sort(idx)
	return movePortsInside(s.ProxyService, idx) + "\n" + review
}

// onEntryPoint reports whether port sp of the proxy Service reaches entry point e.
func onEntryPoint(s *kube.Setup, sp corev1.ServicePort, e proxyroute.EntryPoint) bool {
	return slices.Contains(e.LAN, fmt.Sprintf("%d/%s of %s", sp.Port, kubeobj.Protocol(sp.Protocol), kubeobj.ServiceRef(s.ProxyService)))
}
