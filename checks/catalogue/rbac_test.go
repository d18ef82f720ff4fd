package catalogue_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

func permissionRule(p manifests.Permission) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: []string{p.Verb}}
}

func bundleRules(t *testing.T) map[manifests.Grant][]rbacv1.PolicyRule {
	t.Helper()
	out := map[manifests.Grant][]rbacv1.PolicyRule{}
	for _, g := range manifests.Grants() {
		rules, err := g.Rules()
		require.NoError(t, err)
		out[g] = rules
	}
	return out
}

// The permission rows derive from what the entries declare; every bundle grants its rows.
func TestTheShippedRBACCoversEveryPermissionTheEntriesDeclare(t *testing.T) {
	bundles := bundleRules(t)
	byGrant := map[manifests.Grant][]rbacv1.PolicyRule{}
	for _, p := range catalogue.Permissions() {
		byGrant[p.Grant] = append(byGrant[p.Grant], permissionRule(p))
	}
	require.Len(t, byGrant, len(bundles), "every bundle has declared permissions")
	for grant, needed := range byGrant {
		ok, missing := rbacvalidation.Covers(bundles[grant], needed)
		assert.True(t, ok, "%s does not grant %v", grant, missing)
	}
}

func TestTheShippedRBACGrantsNothingNoEntryDeclares(t *testing.T) {
	// Deliberate extras, each with its reason in the YAML: Gatekeeper names a resource after
	// every constraint kind; API servers before 1.35 authorized WebSocket exec as get.
	allowed := []rbacv1.PolicyRule{
		{APIGroups: []string{"constraints.gatekeeper.sh"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get"}},
	}
	for grant, rules := range bundleRules(t) {
		var used []rbacv1.PolicyRule
		for _, p := range catalogue.Permissions() {
			if p.Grant == grant {
				used = append(used, permissionRule(p))
			}
		}
		ok, extra := rbacvalidation.Covers(append(used, allowed...), rules)
		assert.True(t, ok, "%s grants more than the entries declare: %v", grant, extra)
	}
}

// Every entry's declarations grant in the right place (Validate, a test of the data).
func TestEveryDeclarationIsValid(t *testing.T) {
	require.NoError(t, catalogue.Validate())
}

// knownResources are the resources the API server serves that the plugin may name: the
// built-in kinds of client-go's scheme (resource = the kind's plural, as the RESTMapper guesses
// it), the custom resources discovery and vpn-trace read, and the two subresources the plugin
// uses (the API server's pods/exec and nodes/proxy).
func knownResources() map[schema.GroupResource]bool {
	known := map[schema.GroupResource]bool{{Resource: "pods/exec"}: true, {Resource: "nodes/proxy"}: true}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		known[plural.GroupResource()] = true
	}
	custom := append(kube.DynamicResources(), kube.GatekeeperConstraint("K8sExternalIPs"))
	for _, r := range custom {
		known[r.GVR.GroupResource()] = true
	}
	for _, gvr := range append(facts.CNIPolicyResources(), facts.InstallationGVR) {
		known[gvr.GroupResource()] = true
	}
	return known
}

// Each declared resource is one the API serves (built in) or a custom resource the plugin
// reads: a typo in a declaration ("deployment", the wrong group) fails here, not in a cluster.
func TestEveryDeclaredResourceIsOneTheAPIServes(t *testing.T) {
	known := knownResources()
	entries := append([]catalogue.Entry{catalogue.NotStarted(catalogue.Doctor), catalogue.NotStarted(catalogue.VPNTraceCmd),
		catalogue.NotStarted(catalogue.ClientCheck)}, catalogue.All()...)
	for _, e := range entries {
		for _, r := range e.Reads {
			for _, res := range r.Resources {
				assert.True(t, known[schema.GroupResource{Group: r.Group, Resource: res}], "%s declares %s in group %q, which no API serves", e.ID, res, r.Group)
			}
		}
	}
	// The check itself: a misspelt resource is refused.
	assert.False(t, known[schema.GroupResource{Group: "apps", Resource: "deployment"}])
	assert.False(t, known[schema.GroupResource{Resource: "deployments"}])
}

func TestValidateRefusesWhatTheReadOnlyGrantMustNotHold(t *testing.T) {
	for name, r := range map[string]manifests.Read{
		"exec in the read-only role":    {Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		"a write in the read-only role": {Resources: []string{"pods"}, Verbs: []string{"delete"}},
		"no resource":                   {Group: "apps"},
		"an unknown grant":              {Resources: []string{"pods"}, Grant: "rbac-admin"},
		"a verb the plugin never uses":  {Resources: []string{"pods"}, Verbs: []string{"patch"}, Grant: manifests.GrantHelpers},
	} {
		assert.Error(t, r.Validate(), name)
	}
	assert.NoError(t, manifests.Reads("apps", manifests.SetupNamespaces, "deployments").Validate())
}

// LA001-LIST-FAILED and the checks' notes name the checks from the declarations.
func TestReadersAreFoundFromTheDeclarations(t *testing.T) {
	assert.Equal(t, []string{"LA000", "LA107"}, catalogue.Readers(catalogue.Doctor, "middlewares.traefik.io", nil))
	assert.Equal(t, []string{"LA106", "LA202"}, catalogue.Readers(catalogue.Doctor, "configmaps in kube-system", nil))
	assert.Equal(t, []string{"LA000", "LA104", "LA107"}, catalogue.Readers(catalogue.Doctor, "configmaps in dns", []string{"traefik", "dns"}))
	assert.Empty(t, catalogue.Readers(catalogue.Doctor, "configmaps in elsewhere", []string{"dns"}))
	assert.Equal(t, []string{"pods in dns", "deployments.apps in dns", "endpointslices.discovery.k8s.io in dns", "nodes"}, catalogue.Get("LA103").ReadKeys("dns"))
	for _, p := range catalogue.Permissions() {
		assert.False(t, slices.ContainsFunc(p.For, func(f string) bool { return strings.TrimSpace(f) == "" }), "%+v", p)
	}
}
