//go:build lab

package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

// shippedGrants are the grants of the shipped RBAC manifests; drop removes one resource from
// every rule.
func shippedGrants(t *testing.T, drop string, names ...string) []labkit.Grant {
	t.Helper()
	grants, err := labkit.ManifestGrants(names...)
	require.NoError(t, err)
	for i := range grants {
		grants[i].Rules = without(grants[i].Rules, drop)
	}
	return grants
}

func without(rules []rbacv1.PolicyRule, resource string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r = *r.DeepCopy()
		var kept []string
		for _, res := range r.Resources {
			if res != resource {
				kept = append(kept, res)
			}
		}
		if len(kept) == 0 {
			continue
		}
		r.Resources = kept
		out = append(out, r)
	}
	return out
}

func permissionSkips(r result) []string {
	var out []string
	for _, c := range r.Doc.Checks {
		if c.Status == "skip" && strings.Contains(c.Reason, "not permitted") {
			out = append(out, c.ID+": "+c.Reason)
		}
		for _, f := range c.Findings {
			if strings.Contains(f.Message, "not permitted by RBAC") {
				out = append(out, c.ID+": "+f.Message)
			}
		}
	}
	return out
}

// The shipped least-privilege RBAC is enough: doctor (read-only) and vpn-trace run as a
// ServiceAccount holding exactly those rules and get no permission SKIP; removing one grant
// gives a SKIP that names the missing verb and resource.
func TestShippedRBACIsEnoughAndEachGrantIsNeeded(t *testing.T) {
	full := lab.SwapRBAC(t, "shipped-rbac", shippedGrants(t, "", "rbac-doctor", "rbac-vpn-exec", "rbac-node-configz", "rbac-node-read")...)
	r := runPlugin(t, "doctor", "-o", "json", "--no-helpers", "--skip", "LA402", "--ca-file", lab.CAFile, "--kubeconfig", full)
	require.Equal(t, 0, r.Code, "%s\n%s", r.statuses(), r.Stderr)
	assert.Empty(t, permissionSkips(r))
	assert.Equal(t, "pass", r.check(t, "LA001").Status, "%+v", r.check(t, "LA001").Findings)

	v := runPlugin(t, "vpn-trace", "-n", "vpn", "-o", "json", "--kubeconfig", full)
	assert.Empty(t, permissionSkips(v), v.statuses())
	assert.Equal(t, "fail", v.check(t, "VPN002").Status, "exec worked: ip_forward=0 was read")

	narrow := lab.SwapRBAC(t, "shipped-rbac-no-pdb", shippedGrants(t, "poddisruptionbudgets", "rbac-doctor")...)
	n := runPlugin(t, "doctor", "-o", "json", "--no-helpers", "--only", "LA0,LA1", "--kubeconfig", narrow)
	text := n.Stdout + n.Stderr
	assert.Contains(t, text, "poddisruptionbudgets", "the missing grant is named")
	assert.Regexp(t, `(list|get) poddisruptionbudgets`, text)
}
