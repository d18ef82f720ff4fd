package manifests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

const roleDoc = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: lanaccess}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
`

// Rules' scheme holds rbac/v1 alone: the bundle's other kinds are passed over (they are
// decoded strictly by TestEveryKubernetesManifestDecodesIntoTypedObjects), the role is decoded
// strictly, and a bundle has exactly one role.
func TestRoleRulesDecodeTheOneRoleStrictly(t *testing.T) {
	other := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: lanaccess}\n---\n" +
		"apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n---\n# only a comment\n---\n"
	rules, err := roleRules("b", []byte(other+roleDoc))
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}, rules)

	_, err = roleRules("b", []byte(roleDoc+"  resourceNames: [x]\n  verb: [list]\n"))
	require.ErrorContains(t, err, `unknown field "rules[0].verb"`)

	_, err = roleRules("b", []byte(other))
	require.EqualError(t, err, "b ships 0 roles, want one")
	_, err = roleRules("b", []byte(roleDoc+"---\n"+roleDoc))
	require.EqualError(t, err, "b ships 2 roles, want one")
}
