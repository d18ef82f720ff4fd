//go:build lab

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// LA106 and the horizon of externalIPs (issue 26): the real kube-proxy v1.37.2 started with
// featureGates AllowServiceExternalIPs=false programs no rule for any externalIP
// (pkg/proxy/serviceport.go BaseServicePortInfo.ExternalIPs returns none when the gate is off),
// so nothing answers on the node addresses; doctor reads the gate in kube-proxy's ConfigMap and
// FAILs LA106 naming it, and the paths fail.
func TestLA106FailsWhenKubeProxyRunsWithoutAllowServiceExternalIPs(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	lab.KubeProxyFeatureGate(t, "AllowServiceExternalIPs", false)
	rules := lab.MustExec(t, "node-1", "iptables-save", "-t", "nat")
	assert.NotContains(t, rules, "external IP", "kube-proxy programs no externalIP rule with the gate off")
	_, err := httpsVia(probeHost, "10.0.10.11", 3*time.Second)
	require.Error(t, err, "nothing answers 443 on the node address")
	t.Logf("real: https to 10.0.10.11 with the gate off: %v", err)

	r := doctor(t, "--only", "LA106,LA301,LA401", "--no-helpers")
	la106 := r.check(t, "LA106")
	assert.Equal(t, "fail", la106.Status, "%+v", la106.Findings)
	assert.Contains(t, codes(la106), "LA106-KUBE-PROXY-GATE-OFF")
	assert.True(t, la106.mentions("fail", "AllowServiceExternalIPs=false"), "%+v", la106.Findings)
	assert.Equal(t, "fail", r.check(t, "LA301").Status)
	assert.Equal(t, "fail", r.check(t, "LA401").Status)
	var fix string
	for _, f := range la106.Findings {
		if f.Code == "LA106-KUBE-PROXY-GATE-OFF" {
			fix = f.Remediation
		}
	}
	assert.True(t, strings.Contains(fix, "AllowServiceExternalIPs: true"), fix)
}
