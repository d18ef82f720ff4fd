package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// The corpus case dns-metrics-port-on-lan is the CoreDNS chart's lan-dns with its metrics port
// on the Service: LA103 warns, and its fix (a Service of its own for 9153, then the port taken
// off lan-dns) applied to the fake API makes LA103 pass while 9153 stays reachable inside.
func TestLA103ExtraPortWarnsAndItsFixKeepsThePortInsideTheCluster(t *testing.T) {
	objs := corpusObjects(t, "dns-metrics-port-on-lan")
	c := newCluster(t, objs)
	st, o := runConfigCheck(t, DNSService(c.env(t, kube.Selection{AllNamespaces: true})))
	require.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	require.Len(t, o.Findings, 1)
	f := o.Findings[0]
	assert.Equal(t, "LA103-EXTRA-PORT", f.Code)
	assert.Contains(t, f.Message, "9153/TCP")
	assert.Contains(t, f.Remediation, `{"op":"test","path":"/spec/ports/2/port","value":9153}`)

	applied := roundTrip(t, objs, kube.Selection{AllNamespaces: true}, DNSService, engine.StatusWarn)
	require.Len(t, applied, 1)
	c = newCluster(t, objs)
	c.Apply(t, applied[0])
	inside, err := c.CS.CoreV1().Services("lan-dns").Get(t.Context(), "lan-dns-internal", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, inside.Spec.ExternalIPs)
	require.Len(t, inside.Spec.Ports, 1)
	assert.Equal(t, int32(9153), inside.Spec.Ports[0].Port)
}
