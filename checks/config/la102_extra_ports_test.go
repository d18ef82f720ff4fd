package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func extraPortFinding(t *testing.T, o engine.Outcome) engine.Finding {
	t.Helper()
	for _, f := range o.Findings {
		if f.Code == "LA102-EXTRA-PORT" {
			return f
		}
	}
	require.Failf(t, "no LA102-EXTRA-PORT", "%+v", o.Findings)
	return engine.Finding{}
}

// traefik-41-dashboard-exposed is the Traefik chart with its traefik entry point (8080: ping,
// and the chart's dashboard IngressRoute) exposed on the Service: LA102 warns, and its fix (a
// Service of its own for 8080, the port taken off the proxy Service) makes LA102 pass, with
// 8080 still reachable inside the cluster.
func TestLA102ExtraPortOnTraefiksInternalEntryPoint(t *testing.T) {
	objs := corpusObjects(t, "traefik-41-dashboard-exposed")
	c := newCluster(t, objs)
	st, o := runConfigCheck(t, ProxyService(c.env(t, kube.Selection{AllNamespaces: true})))
	require.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	f := extraPortFinding(t, o)
	assert.Contains(t, f.Message, "8080/TCP -> Traefik's entry point traefik (:8080/TCP), where Traefik itself serves ping")
	assert.Contains(t, f.Remediation, `{"op":"test","path":"/spec/ports/0/port","value":8080}`)

	applied := roundTrip(t, objs, kube.Selection{AllNamespaces: true}, ProxyService, engine.StatusWarn)
	c = newCluster(t, objs)
	for _, fix := range applied {
		c.Apply(t, fix)
	}
	inside, err := c.CS.CoreV1().Services("traefik").Get(t.Context(), "traefik-internal", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, inside.Spec.ExternalIPs)
	require.Len(t, inside.Spec.Ports, 1)
	assert.Equal(t, int32(8080), inside.Spec.Ports[0].Port)
}

// The proxy's other implementations: a port beyond 80/443 reaches listeners the model does not
// read (HAProxy's stats and pprof, Istio's status port), so each is named.
func TestLA102ExtraPortsOfAnotherImplementation(t *testing.T) {
	for name, want := range map[string]string{
		"haproxy-ingress-unauthenticated-host": "1024/TCP, 6060/TCP",
		"istio-gateway-httproutes":             "15021/TCP",
	} {
		c := newCluster(t, corpusObjects(t, name))
		st, o := runConfigCheck(t, ProxyService(c.env(t, kube.Selection{AllNamespaces: true})))
		assert.Equal(t, engine.StatusWarn, st, name)
		f := extraPortFinding(t, o)
		assert.Contains(t, f.Message, "carries "+want+" on the node addresses", name)
		assert.Contains(t, f.Message, "whose listeners there are not modelled", name)
	}
}

// A port whose entry point a TCP router serves is LA107's (traefik-41-tcp-route-extra-port),
// and the HTTP/3 port 443/UDP is the setup's own.
func TestLA102LeavesRoutedAndHTTP3PortsToLA107(t *testing.T) {
	for _, name := range []string{"traefik-41-tcp-route-extra-port", "traefik-41-http3-single-service"} {
		c := newCluster(t, corpusObjects(t, name))
		_, o := runConfigCheck(t, ProxyService(c.env(t, kube.Selection{AllNamespaces: true})))
		for _, f := range o.Findings {
			assert.NotEqual(t, "LA102-EXTRA-PORT", f.Code, "%s: %s", name, f.Message)
		}
	}
}
