package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// la107OnlyWarning runs LA107 on a corpus case, expects one WARN and round-trips its fix.
func la107OnlyWarning(t *testing.T, name string) engine.Finding {
	t.Helper()
	objs := corpusObjects(t, name)
	c := newCluster(t, objs)
	st, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{AllNamespaces: true})))
	require.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	warns := configFindings(o, engine.SeverityWarn, "")
	require.Len(t, warns, 1)
	roundTrip(t, objs, kube.Selection{AllNamespaces: true}, Audience, engine.StatusWarn)
	return warns[0]
}

// traefik-41-tcp-route-extra-port: an IngressRouteTCP HostSNI(`*`) on entry point postgres,
// which the proxy Service's 5432 reaches on the node addresses: LA107 warns that the database
// is open to the LAN, and its fix (5432 kept inside the cluster) makes LA107 pass.
func TestLA107TCPRouteOnAnExtraPort(t *testing.T) {
	f := la107OnlyWarning(t, "traefik-41-tcp-route-extra-port")
	assert.Equal(t, "LA107-TCP-UDP-ROUTE", f.Code)
	assert.Equal(t, "IngressRouteTCP db/postgres", f.Object)
	assert.Contains(t, f.Message, "every TCP connection of its entry points (HostSNI(`*`)) to Service db/postgres through postgres (:5432/TCP), reached on the node addresses by 5432/TCP of Service traefik/traefik")
}

// traefik-41-other-host-outside-zone: pgadmin.corp.example.net is outside the zone but served
// on the node addresses without authentication: LA107-OTHER-HOST, and the printed middleware
// fix makes LA107 pass.
func TestLA107RouteOutsideTheZone(t *testing.T) {
	f := la107OnlyWarning(t, "traefik-41-other-host-outside-zone")
	assert.Equal(t, "LA107-OTHER-HOST", f.Code)
	assert.Contains(t, f.Message, "pgadmin.corp.example.net, outside the zone apps.example.com")
}

// Istio's gateway: istio-gateway-httproutes' AuthorizationPolicy CUSTOM targeting the Gateway
// for *.apps.example.com on 443 authenticates grafana (LA107 passes); in
// istio-gateway-httproute-no-authz none applies, LA107 warns, and the printed AuthorizationPolicy
// applied to the fake API makes LA107 pass (the model's reading of it; the provider is a
// placeholder where the cluster names none).
func TestLA107JudgesIstioByItsAuthorizationPolicies(t *testing.T) {
	c := newCluster(t, corpusObjects(t, "istio-gateway-httproutes"))
	st, o := runConfigCheck(t, Audience(c.env(t, kube.Selection{AllNamespaces: true})))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)

	f := la107OnlyWarning(t, "istio-gateway-httproute-no-authz")
	assert.Equal(t, "LA107-NO-AUTH", f.Code)
	assert.Equal(t, "HTTPRoute monitoring/grafana", f.Object)
	assert.Contains(t, f.Remediation, "kind: AuthorizationPolicy")
	assert.Contains(t, f.Remediation, "action: CUSTOM")
}

// The lab's auth portal: an Ingress for auth.example.com (outside the zone, no middleware) whose
// backend is Service auth/oauth2-proxy, the forwardAuth address's. It is the login itself, not
// an application open to the LAN: information, and LA107 still passes; the same route to another
// Service is LA107-OTHER-HOST.
func TestLA107TheAuthServersOwnRouteIsThePortal(t *testing.T) {
	class := "traefik"
	portal := func(service string) *networkingv1.Ingress {
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "oauth2-proxy", Annotations: map[string]string{proxyroute.TraefikEntryPointsAnnotation: "websecure"}},
			Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: "auth.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: service, Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}},
		}
	}
	st, o := runConfigCheck(t, Audience(configEnv(t, nil, addObjects(portal("oauth2-proxy")))))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	f := configFindings(o, engine.SeverityInfo, "Ingress auth/oauth2-proxy")
	require.Len(t, f, 1)
	assert.Equal(t, "LA107-AUTH-PORTAL", f[0].Code)
	assert.Contains(t, f[0].Message, "Service auth/oauth2-proxy, which the forwardAuth of Middleware")

	st, o = runConfigCheck(t, Audience(configEnv(t, nil, addObjects(portal("other")))))
	assert.Equal(t, engine.StatusWarn, st)
	assert.Equal(t, "LA107-OTHER-HOST", configFindings(o, engine.SeverityWarn, "Ingress auth/oauth2-proxy")[0].Code)
}
