package config

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Audience is LA107: once the proxy answers on the node addresses, every route it serves in
// the zone is reachable by the whole LAN, not only by VPN members. A route without an
// authentication middleware (forwardAuth, basicAuth, digestAuth, or a chain holding one) must
// be reviewed: an application with its own login may be fine; mark it reviewed with the
// annotation lanaccess.io/lan-audience=reviewed. The routes are discovery's model
// (Setup.Routes): the same the probe host is chosen from.
func Audience(env *Env) engine.Check {
	return check(env, "LA107", audience)
}

func audience(s *kube.Setup) engine.Outcome {
	var findings []engine.Finding
	for _, r := range s.Routes {
		if r.Served && r.InZone(s.Zone) {
			findings = append(findings, judgeRoute(s, r)...)
		}
	}
	return engine.Partial("LA107", findings, s.UnreadReason(routeReads()...))
}

// routeReads are the reads the check relies on: Ingresses, and the Traefik CRDs that exist.
func routeReads() []string {
	keys := []string{kube.ReadKey("networking.k8s.io", "ingresses", "")}
	for _, r := range append(kube.TraefikIngressRoutes(), kube.TraefikMiddlewares()...) {
		keys = append(keys, r.Key())
	}
	return keys
}

func judgeRoute(s *kube.Setup, r kube.Route) []engine.Finding {
	var missing []string
	for _, m := range r.Middlewares {
		if !m.Found && s.MiddlewaresKnown {
			missing = append(missing, m.Raw)
		}
	}
	ev := map[string]any{"hosts": r.Hosts, "middlewares": refsRaw(r.Middlewares)}
	if len(missing) > 0 {
		// Traefik disables a router whose middleware is missing: the route is not served at
		// all, so its audience is moot until the reference is fixed.
		return []engine.Finding{{Code: "LA107-MIDDLEWARE-MISSING", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("references middleware %s, which does not exist: Traefik disables the router, so %s answers 404", strings.Join(missing, ", "), hostsText(r.Hosts)),
			Remediation: remedy.Command("kubectl", "get", "middlewares.traefik.io", "-A") +
				"   # create the middleware or fix the reference in " + r.Object}}
	}
	if r.Authentication() != "" {
		return nil
	}
	if r.Reviewed {
		return []engine.Finding{{Code: "LA107-REVIEWED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("no authentication middleware on %s, reviewed for the LAN (%s=reviewed)", hostsText(r.Hosts), kube.ReviewedAnnotation)}}
	}
	return []engine.Finding{{Code: "LA107-NO-AUTH", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
		Message:     fmt.Sprintf("no authentication middleware on %s: it is now reachable by the whole LAN, not only by VPN members", hostsText(r.Hosts)),
		Remediation: audienceRemedy(s, r)}}
}

func refsRaw(refs []kube.MiddlewareRef) []string {
	out := []string{}
	for _, r := range refs {
		out = append(out, r.Raw)
	}
	return out
}

func hostsText(hosts []string) string {
	if len(hosts) == 0 {
		return "every host (no Host rule)"
	}
	return strings.Join(hosts, ", ")
}

// audienceRemedy adds the forward-auth middleware the other routes use, or marks the route
// reviewed when the application has its own login.
func audienceRemedy(s *kube.Setup, r kube.Route) string {
	ns, name, found := strings.Cut(s.AuthMiddleware, "/")
	if !found {
		ns, name = "NAMESPACE", "AUTH-MIDDLEWARE"
	}
	review := "# or, if the application has its own login and may face the LAN:\n" +
		remedy.Kubectl(r.Namespace, "annotate", strings.ToLower(r.Kind), r.Name, kube.ReviewedAnnotation+"=reviewed")
	if r.Kind == "Ingress" {
		value := strings.Join(append(refsRaw(r.Middlewares), ns+"-"+name+"@kubernetescrd"), ",")
		return remedy.Kubectl(r.Namespace, "annotate", "ingress", r.Name, kube.TraefikMiddlewaresAnnotation+"="+value, "--overwrite") + "\n" + review
	}
	ref := map[string]string{"name": name, "namespace": ns}
	op := remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/routes/%d/middlewares", r.Index), Value: []map[string]string{ref}}
	if len(r.Middlewares) > 0 {
		op = remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/routes/%d/middlewares/-", r.Index), Value: ref}
	}
	return remedy.JSONPatch(r.Namespace, "ingressroute", r.Name, op) + "\n" + review
}
