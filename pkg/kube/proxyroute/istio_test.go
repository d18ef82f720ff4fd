package proxyroute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func authzPolicy(action string, rule map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": map[string]any{"namespace": "gateway", "name": "p"},
		"spec": map[string]any{"action": action, "provider": map[string]any{"name": "oauth2-proxy"},
			"targetRefs": []any{map[string]any{"kind": "Gateway", "name": "lan"}}, "rules": []any{rule}},
	}}
}

// Istio's host match (exact, "*", "*suffix", "prefix*") and what a CUSTOM rule covers: all
// requests of the route (hosts and ports only), some of them (paths, sources: cannot tell), or
// none.
func TestIstioCustomPolicyCoverage(t *testing.T) {
	assert.True(t, istioHostMatches("*.apps.example.com", "grafana.apps.example.com"))
	assert.True(t, istioHostMatches("*.apps.example.com", "*.apps.example.com"))
	assert.False(t, istioHostMatches("*.apps.example.com", "apps.example.com"))
	assert.True(t, istioHostMatches("grafana.*", "grafana.apps.example.com"))
	assert.False(t, istioHostMatches("grafana.*", "*.apps.example.com"))

	to := func(op map[string]any) map[string]any {
		return map[string]any{"to": []any{map[string]any{"operation": op}}}
	}
	hosts, ports := []string{"grafana.apps.example.com"}, []string{"443"}
	how, _ := istioCovers(authzPolicy("CUSTOM", to(map[string]any{"hosts": []any{"*.apps.example.com"}, "ports": []any{"443"}})), hosts, ports)
	assert.Equal(t, "Istio CUSTOM oauth2-proxy (ext_authz)", how)
	how, partial := istioCovers(authzPolicy("CUSTOM", to(map[string]any{"hosts": []any{"*.apps.example.com"}, "paths": []any{"/admin*"}})), hosts, ports)
	assert.Empty(t, how)
	assert.Contains(t, partial, "matches only some of its requests (paths)")
	how, partial = istioCovers(authzPolicy("CUSTOM", to(map[string]any{"ports": []any{"80"}})), hosts, ports)
	assert.Empty(t, how)
	assert.Empty(t, partial, "a rule for another port matches none of the route's requests")
	how, _ = istioCovers(authzPolicy("CUSTOM", map[string]any{}), hosts, ports)
	assert.Equal(t, "Istio CUSTOM oauth2-proxy (ext_authz)", how, "an empty rule matches every request")

	assert.True(t, istioApplies(authzPolicy("ALLOW", nil), "gateway", "lan", nil))
	assert.False(t, istioApplies(authzPolicy("CUSTOM", nil), "gateway", "other", nil), "targetRefs another Gateway")
	assert.False(t, istioApplies(authzPolicy("CUSTOM", nil), "elsewhere", "lan", nil), "a policy applies in its own namespace only")
}
