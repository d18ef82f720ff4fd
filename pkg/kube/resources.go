package kube

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DynamicResource is a custom resource discovery reads through the dynamic client, when its
// CRD is installed.
type DynamicResource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// ListKind is the kind of a list of r, as the fake dynamic client needs it.
func (r DynamicResource) ListKind() string { return r.Kind + "List" }

func dyn(group, version, resource, kind string, namespaced bool) DynamicResource {
	return DynamicResource{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Kind: kind, Namespaced: namespaced}
}

// TraefikIngressRoutes are Traefik's IngressRoutes: Traefik moved from traefik.containo.us to
// traefik.io in v2.10, so both groups are read and either generation is understood.
func TraefikIngressRoutes() []DynamicResource {
	return []DynamicResource{
		dyn("traefik.io", "v1alpha1", "ingressroutes", "IngressRoute", true),
		dyn("traefik.containo.us", "v1alpha1", "ingressroutes", "IngressRoute", true),
	}
}

// TraefikMiddlewares are Traefik's Middlewares, in both groups.
func TraefikMiddlewares() []DynamicResource {
	return []DynamicResource{
		dyn("traefik.io", "v1alpha1", "middlewares", "Middleware", true),
		dyn("traefik.containo.us", "v1alpha1", "middlewares", "Middleware", true),
	}
}

// TraefikStreamRoutes are Traefik's IngressRouteTCPs and IngressRouteUDPs, in both groups: TCP
// and UDP routers, which serve every connection of an entry point they match whatever its
// HTTP routes say (traefik/traefik v3.7.9 pkg/provider/kubernetes/crd kubernetes_tcp.go,
// kubernetes_udp.go).
func TraefikStreamRoutes() []DynamicResource {
	return []DynamicResource{
		dyn("traefik.io", "v1alpha1", "ingressroutetcps", "IngressRouteTCP", true),
		dyn("traefik.containo.us", "v1alpha1", "ingressroutetcps", "IngressRouteTCP", true),
		dyn("traefik.io", "v1alpha1", "ingressrouteudps", "IngressRouteUDP", true),
		dyn("traefik.containo.us", "v1alpha1", "ingressrouteudps", "IngressRouteUDP", true),
	}
}

// IstioAuthorizationPolicies are Istio's AuthorizationPolicies (security.istio.io v1, else
// v1beta1: the same objects), which decide whether Istio's gateway authenticates a request.
func IstioAuthorizationPolicies() []DynamicResource {
	return []DynamicResource{
		dyn("security.istio.io", "v1", "authorizationpolicies", "AuthorizationPolicy", true),
		dyn("security.istio.io", "v1beta1", "authorizationpolicies", "AuthorizationPolicy", true),
	}
}

// ContourHTTPProxies are Contour's HTTPProxies (projectcontour/contour apis/projectcontour/v1
// httpproxy.go): the routes of a Contour proxy, read for the probe host and named by LA107.
func ContourHTTPProxies() DynamicResource {
	return dyn("projectcontour.io", "v1", "httpproxies", "HTTPProxy", true)
}

// KyvernoPolicyResources are Kyverno's ClusterPolicies and (namespaced) Policies.
func KyvernoPolicyResources() []DynamicResource {
	return []DynamicResource{
		dyn("kyverno.io", "v1", "clusterpolicies", "ClusterPolicy", false),
		dyn("kyverno.io", "v1", "policies", "Policy", true),
	}
}

// GatekeeperTemplates are Gatekeeper's ConstraintTemplates.
func GatekeeperTemplates() DynamicResource {
	return dyn("templates.gatekeeper.sh", "v1", "constrainttemplates", "ConstraintTemplate", false)
}

// GatekeeperConstraint is the resource holding the constraints of a template's kind: group
// constraints.gatekeeper.sh, resource the kind in lower case (K8sExternalIPs -> k8sexternalips).
func GatekeeperConstraint(kind string) DynamicResource {
	return dyn("constraints.gatekeeper.sh", "v1beta1", strings.ToLower(kind), kind, false)
}

// GatewayAPIGroup is the Gateway API's group.
const GatewayAPIGroup = "gateway.networking.k8s.io"

// GatewayAPIResources are the Gateway API kinds the route model reads, each in the versions
// discovery tries in order (v1 since Gateway API 1.0, ReferenceGrant v1 since 1.5; v1beta1
// before): the first one the API server serves is read, never both (they are the same objects).
func GatewayAPIResources() [][]DynamicResource {
	kinds := []struct {
		resource, kind string
		namespaced     bool
	}{{"gatewayclasses", "GatewayClass", false}, {"gateways", "Gateway", true}, {"httproutes", "HTTPRoute", true},
		{"referencegrants", "ReferenceGrant", true}}
	out := make([][]DynamicResource, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, []DynamicResource{
			dyn(GatewayAPIGroup, "v1", k.resource, k.kind, k.namespaced),
			dyn(GatewayAPIGroup, "v1beta1", k.resource, k.kind, k.namespaced),
		})
	}
	return out
}

// DynamicResources lists the custom resources discovery may read (constraints excepted).
func DynamicResources() []DynamicResource {
	out := slices.Concat(TraefikIngressRoutes(), TraefikMiddlewares(), TraefikStreamRoutes(), IstioAuthorizationPolicies())
	out = append(out, KyvernoPolicyResources()...)
	out = append(out, ContourHTTPProxies())
	for _, versions := range GatewayAPIResources() {
		out = append(out, versions...)
	}
	out = append(out, CalicoInstallations())
	out = append(out, CalicoFelixConfigurations()...)
	return append(out, GatekeeperTemplates())
}

// ReadKey names one read of discovery, the key of Setup.Partial and Setup.Installed:
// "services", "ingressroutes.traefik.io", "configmaps in kube-system".
func ReadKey(group, resource, namespace string) string {
	k := resource
	if group != "" {
		k += "." + group
	}
	if namespace != "" {
		k += " in " + namespace
	}
	return k
}

// Key is the ReadKey of r across all namespaces.
func (r DynamicResource) Key() string { return ReadKey(r.GVR.Group, r.GVR.Resource, "") }

// CalicoInstallations is the Calico operator's Installation (cluster-scoped, name default).
func CalicoInstallations() DynamicResource {
	return dyn("operator.tigera.io", "v1", "installations", "Installation", false)
}

// CalicoFelixConfigurations is Felix's configuration, in the versions discovery tries in
// order: projectcalico.org/v3 (Calico's own CRDs since 3.30, or its API server) and
// crd.projectcalico.org/v1 (the CRDs behind the API server before).
func CalicoFelixConfigurations() []DynamicResource {
	return []DynamicResource{
		dyn("projectcalico.org", "v3", "felixconfigurations", "FelixConfiguration", false),
		dyn("crd.projectcalico.org", "v1", "felixconfigurations", "FelixConfiguration", false),
	}
}
