//go:build lab

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

// An identity holding Roles only in the setup's namespace (traefik holds both the proxy and
// lan-dns in the lab) runs doctor -n traefik: discovery makes no read the real API server
// refuses (nothing forbidden anywhere in the report), the checks judge what is there, and
// LA001 names the cluster-wide reads it skipped and what they leave unjudged.
func TestDoctorAsANamespaceOnlyIdentity(t *testing.T) {
	// What doctor reads in a namespace: the setup's objects and the namespaced routes and
	// policies (pkg/manifests Permissions; LA001 names any of these that is missing).
	rules := labkit.ReadOnlyRules("services", "pods", "configmaps", "endpointslices", "deployments", "poddisruptionbudgets", "ingresses")
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: []string{"traefik.io", "traefik.containo.us"}, Resources: []string{"ingressroutes", "ingressroutetcps", "ingressrouteudps", "middlewares"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"projectcontour.io"}, Resources: []string{"httpproxies"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gateways", "httproutes", "referencegrants"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"kyverno.io"}, Resources: []string{"policies"}, Verbs: []string{"get", "list"}})
	kubeconfig := lab.SwapRBAC(t, "namespace-only", labkit.Grant{Namespace: "traefik", Rules: rules})

	r := doctor(t, "-n", "traefik", "--no-helpers", "--only", "LA0,LA1,LA3,LA401", "--host", probeHost, "--kubeconfig", kubeconfig)
	t.Logf("exit %d in %s: %s", r.Code, r.Elapsed, r.statuses())
	require.Contains(t, []int{0, 1}, r.Code, "doctor ran and judged:\n%s", r.Stderr)
	raw, err := json.Marshal(r.Doc)
	require.NoError(t, err)
	assert.NotContains(t, strings.ToLower(string(raw)+r.Stderr), "forbidden", "no read outside the namespace was made")
	for _, c := range r.Doc.Checks {
		assert.NotEqual(t, "error", c.Status, "%s: %s", c.ID, c.Reason)
	}

	la001 := r.check(t, "LA001")
	assert.Equal(t, "pass", la001.Status, "%+v", la001.Findings)
	require.Len(t, la001.Findings, 1, "%+v", la001.Findings)
	scope := la001.Findings[0]
	assert.Equal(t, "LA001-SCOPE", scope.Code)
	assert.Contains(t, scope.Message, "discovery stayed in namespace traefik")
	for _, read := range []string{"nodes", "services", "daemonsets.apps", "pods in kube-system"} {
		assert.Contains(t, scope.Evidence["skipped"], read)
	}
	for _, id := range []string{"LA101", "LA106", "LA202"} {
		assert.Contains(t, scope.Evidence["unjudged"], id)
	}
	// LA104 is named: it reads the nodes for the sources an acl or a view would judge (none
	// here, so it still passes below); the Corefile itself is in the namespace
	assert.NotContains(t, scope.Evidence["unjudged"], "LA105", "the DNS Deployment is in the namespace")
	assert.Contains(t, scope.Remediation, "doctor -A --proxy-service traefik/traefik --dns-service traefik/lan-dns")

	// What lies in the namespace is judged: the Corefile, the Services, the DNS answers.
	for _, id := range []string{"LA102", "LA103", "LA104", "LA301", "LA304"} {
		assert.Equal(t, "pass", r.check(t, id).Status, "%s: %+v", id, r.check(t, id))
	}
}
