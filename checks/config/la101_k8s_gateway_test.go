package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// The k8s_gateway chart as the LAN DNS: k8s_gateway answers the routed hosts with their
// Ingresses' status (ori-edge/k8s_gateway kubernetes.go lookupIngressIndex). With ingress-nginx
// publishing its ClusterIP there, LA101 fails and its fix is the controller's published address,
// never a Corefile edit; with --publish-status-address set to the node addresses (the case that
// applies that fix through the chart's values), LA101 passes.
func TestLA101JudgesTheZoneAsK8sGatewayAnswersIt(t *testing.T) {
	c := newCluster(t, corpusObjects(t, "k8s-gateway-chart-with-ingress-nginx"))
	env := c.env(t, kube.Selection{AllNamespaces: true})
	require.Equal(t, "apps.example.com", env.Setup.Zone.String(), "the zone is k8s_gateway's argument")
	st, o := runConfigCheck(t, AddressConsistency(env))
	require.Equal(t, engine.StatusFail, st, "%+v", o.Findings)
	found := false
	for _, f := range o.Findings {
		if f.Code == "LA101-ZONE-EXTRA" {
			found = true
			assert.Contains(t, f.Message, "10.96.102.251")
			assert.Contains(t, f.Remediation, "--publish-status-address=10.0.10.11,10.0.10.12,10.0.10.13")
			assert.NotContains(t, f.Remediation, "edit configmap")
		}
	}
	assert.True(t, found, "%+v", o.Findings)

	c = newCluster(t, corpusObjects(t, "k8s-gateway-chart-publish-status-address"))
	st, o = runConfigCheck(t, AddressConsistency(c.env(t, kube.Selection{AllNamespaces: true})))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
}
