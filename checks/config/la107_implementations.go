package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// LA107 judges a route with the semantics of the implementation that serves it (discovery's
// proxyroute.Implementation): Traefik's middlewares, ingress-nginx's authentication
// annotations. Any other implementation is named with what was not judged: a WARN, never a
// PASS from Traefik's reasoning, never a FAIL.

// implementationFindings is the WARN naming an implementation whose routes are not judged.
func implementationFindings(s *kube.Setup) []engine.Finding {
	impl := s.Implementation
	if impl.Modelled() || !impl.PodsRead {
		return nil
	}
	return []engine.Finding{{Code: "LA107-NOT-MODELLED", Severity: engine.SeverityWarn, Object: kubeServiceRef(s),
		Evidence: map[string]any{"implementation": string(impl.Name), "identifiedBy": impl.IdentifiedBy, "image": impl.Image, "version": impl.Version},
		Message: fmt.Sprintf("the Service on the node addresses fronts %s; %s, so whether its routes in the zone require authentication is not judged: review each route's audience for the whole LAN",
			impl.String(), impl.Unjudged),
		Remediation: "# a diagnosis, not a fix doctor can prove: doctor models Traefik and ingress-nginx only\n" +
			"# review the routes this proxy serves in the zone and mark each reviewed once it authenticates or may face the LAN:\n" +
			remedy.Command("kubectl", "annotate", "KIND", "NAME", "-n", "NAMESPACE", proxyroute.ReviewedAnnotation+"=reviewed")}}
}

func kubeServiceRef(s *kube.Setup) string {
	if s.ProxyService == nil {
		return ""
	}
	return "Service " + s.ProxyService.Namespace + "/" + s.ProxyService.Name
}

// unjudgedRoute lists a route served by an implementation that is not modelled (information:
// the WARN is implementationFindings').
func unjudgedRoute(r proxyroute.Route, ev map[string]any) []engine.Finding {
	return []engine.Finding{{Code: "LA107-NOT-JUDGED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
		Message: fmt.Sprintf("%s: %s, audience not judged", hostsText(r.Hosts), r.Unjudged)}}
}

// nginxAudience judges an Ingress ingress-nginx serves: its auth-url / auth-type annotations or
// the ConfigMap's global-auth-url authenticate it; a catch-all Ingress answers every other host.
func nginxAudience(s *kube.Setup, r proxyroute.Route, ev map[string]any) []engine.Finding {
	if r.Authentication() != "" {
		return nil
	}
	hosts := hostsText(r.Hosts)
	if r.CatchAll {
		hosts = "every host no other Ingress names (its only defaultBackend makes it ingress-nginx's catch-all server: the apex, any label of the zone, a bare node address)"
	}
	if r.Reviewed {
		return []engine.Finding{{Code: "LA107-REVIEWED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("no authentication on %s, reviewed for the LAN (%s=reviewed)", hosts, proxyroute.ReviewedAnnotation)}}
	}
	if r.AuthUnsure != "" {
		return []engine.Finding{{Code: "LA107-NO-AUTH", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
			Message:     fmt.Sprintf("ingress-nginx serves %s with no auth-url or auth-type annotation, and whether a global-auth-url covers it cannot be told (%s)", hosts, r.AuthUnsure),
			Remediation: nginxRemedy(s, r)}}
	}
	return []engine.Finding{{Code: "LA107-NO-AUTH", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
		Message:     fmt.Sprintf("ingress-nginx serves %s with no authentication (no auth-url or auth-type annotation, no global-auth-url): it is reachable by the whole LAN, not only by VPN members", hosts),
		Remediation: nginxRemedy(s, r)}}
}

// nginxRemedy adds ingress-nginx's external authentication to the Ingress: the auth-url and
// auth-signin of an Ingress of the cluster that has them, else placeholders; a catch-all
// Ingress is better given a host (or the controller --disable-catch-all).
func nginxRemedy(s *kube.Setup, r proxyroute.Route) string {
	prefix := s.Nginx.AnnotationsPrefix
	url, signin := "https://AUTH-SERVICE/oauth2/auth", "https://AUTH-HOST/oauth2/start?rd=$escaped_request_uri"
	var steps []string
	found := false
	for _, ing := range s.Ingresses {
		if u := ing.Annotations[prefix+"/auth-url"]; u != "" {
			url, signin, found = u, ing.Annotations[prefix+"/auth-signin"], true
			break
		}
	}
	if !found {
		steps = append(steps, remedy.Commentf("# no Ingress of the cluster has an auth-url yet: point these at your authentication service (oauth2-proxy...)"))
	}
	if r.CatchAll {
		steps = append(steps, remedy.Commentf("# a catch-all Ingress answers every unknown host: give it a rule with a host, or run the controller with --disable-catch-all; or authenticate it:"))
	}
	args := []string{"annotate", "ingress", r.Name, prefix + "/auth-url=" + url}
	if signin != "" {
		args = append(args, prefix+"/auth-signin="+signin)
	}
	steps = append(steps, remedy.Kubectl(r.Namespace, append(args, "--overwrite")...),
		"# or, if the application has its own login and may face the LAN:",
		remedy.Kubectl(r.Namespace, "annotate", "ingress", r.Name, proxyroute.ReviewedAnnotation+"=reviewed"))
	return strings.Join(steps, "\n")
}

// istioAudience judges an HTTPRoute Istio's gateway serves: an AuthorizationPolicy CUSTOM whose
// rule matches every request of the route authenticates it (pkg/kube/proxyroute istio.go); a
// RequestRedirect rule only redirects.
func istioAudience(s *kube.Setup, r proxyroute.Route, ev map[string]any) []engine.Finding {
	if r.Authentication() != "" {
		return nil
	}
	if how := r.RedirectOnly(); how != "" {
		return []engine.Finding{{Code: "LA107-REDIRECT-ONLY", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("%s only redirects: Istio's gateway answers every request with %s, so it exposes nothing to the LAN", hostsText(r.Hosts), how)}}
	}
	if r.Reviewed {
		return []engine.Finding{{Code: "LA107-REVIEWED", Severity: engine.SeverityInfo, Object: r.Object, Evidence: ev,
			Message: fmt.Sprintf("no AuthorizationPolicy authenticates %s, reviewed for the LAN (%s=reviewed)", hostsText(r.Hosts), proxyroute.ReviewedAnnotation)}}
	}
	return []engine.Finding{{Code: "LA107-NO-AUTH", Severity: engine.SeverityWarn, Object: r.Object, Evidence: ev,
		Message:     fmt.Sprintf("Istio's gateway serves %s and no AuthorizationPolicy CUSTOM applying to it matches every request of the route (a RequestAuthentication alone lets requests without a token through): it is reachable by the whole LAN, not only by VPN members", hostsText(r.Hosts)),
		Remediation: istioRemedy(s, r)}}
}

// istioRemedy is an AuthorizationPolicy CUSTOM on the proxy's Gateway for the route's hosts,
// with the ext_authz provider of a CUSTOM policy of the cluster (else a placeholder: the
// providers are meshConfig's extensionProviders, which doctor does not read).
func istioRemedy(s *kube.Setup, r proxyroute.Route) string {
	gw := ""
	if s.ProxyWorkload != nil {
		gw = s.ProxyWorkload.Spec.Template.Labels["gateway.networking.k8s.io/gateway-name"]
	}
	provider := ""
	for _, p := range s.AuthorizationPolicies {
		if a, _, _ := unstructured.NestedString(p.Object, "spec", "action"); a == "CUSTOM" {
			provider, _, _ = unstructured.NestedString(p.Object, "spec", "provider", "name")
			break
		}
	}
	var steps []string
	if provider == "" {
		provider = "EXT-AUTHZ-PROVIDER"
		steps = append(steps, remedy.Comment("no CUSTOM AuthorizationPolicy exists yet: name an extensionProviders entry of Istio's meshConfig (oauth2-proxy...) below"))
	}
	hosts := make([]any, 0, len(r.Hosts))
	for _, h := range r.Hosts {
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		hosts = append(hosts, "*")
	}
	policy := map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": map[string]any{"name": "lan-auth-" + r.Name, "namespace": s.ProxyService.Namespace},
		"spec": map[string]any{
			"targetRefs": []any{map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": gw}},
			"action":     "CUSTOM", "provider": map[string]any{"name": provider},
			"rules": []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{"hosts": hosts}}}}},
		},
	}
	steps = append(steps, remedy.Apply(remedy.YAML(policy)),
		"# or, if the application has its own login and may face the LAN:",
		remedy.Kubectl(r.Namespace, "annotate", "httproute", r.Name, proxyroute.ReviewedAnnotation+"=reviewed"))
	return strings.Join(steps, "\n")
}
