package manifests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// rbacObjects indexes the objects of every shipped RBAC bundle.
type rbacObjects struct {
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role
	// boundTo lists the subjects bound to "ClusterRole NAME" or "Role NAMESPACE/NAME".
	boundTo map[string][]rbacv1.Subject
	// serviceAccounts are "namespace/name", per bundle.
	serviceAccounts map[Grant][]string
	namespaces      map[string]*corev1.Namespace
	policies        []*admissionregistrationv1.ValidatingAdmissionPolicy
	policyBindings  []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

func shippedRBAC(t *testing.T) rbacObjects {
	t.Helper()
	o := rbacObjects{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}, boundTo: map[string][]rbacv1.Subject{},
		serviceAccounts: map[Grant][]string{}, namespaces: map[string]*corev1.Namespace{}}
	for _, g := range Grants() {
		for _, obj := range decodeAll(t, string(g)) {
			switch v := obj.(type) {
			case *rbacv1.ClusterRole:
				o.clusterRoles[v.Name] = v
			case *rbacv1.Role:
				o.roles[v.Namespace+"/"+v.Name] = v
			case *rbacv1.ClusterRoleBinding:
				o.boundTo["ClusterRole "+v.RoleRef.Name] = append(o.boundTo["ClusterRole "+v.RoleRef.Name], v.Subjects...)
			case *rbacv1.RoleBinding:
				key := v.RoleRef.Kind + " " + v.Namespace + "/" + v.RoleRef.Name
				if v.RoleRef.Kind == "ClusterRole" {
					key = "ClusterRole " + v.RoleRef.Name
				}
				o.boundTo[key] = append(o.boundTo[key], v.Subjects...)
			case *corev1.ServiceAccount:
				o.serviceAccounts[g] = append(o.serviceAccounts[g], v.Namespace+"/"+v.Name)
			case *corev1.Namespace:
				o.namespaces[v.Name] = v
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				o.policies = append(o.policies, v)
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				o.policyBindings = append(o.policyBindings, v)
			}
		}
	}
	return o
}

// grantRole maps each grant to the rules of the role that carries it, and the binding key.
func (o rbacObjects) grantRole(t *testing.T) map[Grant]struct {
	rules   []rbacv1.PolicyRule
	binding string
} {
	t.Helper()
	clusterRole := func(name string) []rbacv1.PolicyRule {
		r, ok := o.clusterRoles[name]
		require.True(t, ok, "ClusterRole %s is shipped", name)
		return r.Rules
	}
	role := func(key string) []rbacv1.PolicyRule {
		r, ok := o.roles[key]
		require.True(t, ok, "Role %s is shipped", key)
		return r.Rules
	}
	return map[Grant]struct {
		rules   []rbacv1.PolicyRule
		binding string
	}{
		GrantDoctor:      {clusterRole("kubectl-lanaccess-doctor"), "ClusterRole kubectl-lanaccess-doctor"},
		GrantNodeConfigz: {clusterRole("kubectl-lanaccess-node-configz"), "ClusterRole kubectl-lanaccess-node-configz"},
		GrantVPNExec:     {role("vpn/kubectl-lanaccess-vpn-exec"), "Role vpn/kubectl-lanaccess-vpn-exec"},
		GrantVPNDryRun:   {role("vpn/kubectl-lanaccess-vpn-dryrun"), "Role vpn/kubectl-lanaccess-vpn-dryrun"},
		GrantHelpers:     {role(podexec.DefaultHelperNamespace + "/kubectl-lanaccess-helpers"), "Role " + podexec.DefaultHelperNamespace + "/kubectl-lanaccess-helpers"},
		GrantNodeRead:    {role("kube-system/kubectl-lanaccess-node-read"), "Role kube-system/kubectl-lanaccess-node-read"},
	}
}

func serviceAccount(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: "lanaccess"}
}

// Grant.Rules, which the catalogue's tests hold to the declared permissions, reads the rules
// of the role each bundle binds to its ServiceAccount.
func TestRulesAreTheRulesOfTheBundlesBoundRole(t *testing.T) {
	o := shippedRBAC(t)
	for grant, g := range o.grantRole(t) {
		rules, err := grant.Rules()
		require.NoError(t, err)
		assert.Equal(t, g.rules, rules, "%s", grant)
		assert.Contains(t, o.boundTo[g.binding], serviceAccount(grant.ServiceAccount()), "%s is bound to the bundle's ServiceAccount", g.binding)
	}
}

// The in-cluster Job and hooks run as kubectl-lanaccess: it must hold the read-only role and
// nothing else, whichever bundles are applied. Exec into the VPN pods, nodes/proxy and helper
// pods each come with their own ServiceAccount.
func TestTheReadOnlyServiceAccountIsBoundToTheReadOnlyRoleOnly(t *testing.T) {
	o := shippedRBAC(t)
	readOnly := serviceAccount(GrantDoctor.ServiceAccount())
	for binding, subjects := range o.boundTo {
		for _, s := range subjects {
			if s == readOnly {
				assert.Equal(t, "ClusterRole kubectl-lanaccess-doctor", binding, "the read-only ServiceAccount is bound to %s", binding)
			}
		}
	}
	for grant, g := range o.grantRole(t) {
		if grant == GrantDoctor {
			continue
		}
		assert.Equal(t, []rbacv1.Subject{serviceAccount(grant.ServiceAccount())}, o.boundTo[g.binding], "%s is bound to its own ServiceAccount only", g.binding)
	}
}

func TestEachBundleShipsItsOwnServiceAccount(t *testing.T) {
	o := shippedRBAC(t)
	seen := map[string]bool{}
	for _, g := range Grants() {
		assert.Equal(t, []string{"lanaccess/" + g.ServiceAccount()}, o.serviceAccounts[g], "%s ships exactly its ServiceAccount", g)
		assert.False(t, seen[g.ServiceAccount()], "%s shares a ServiceAccount", g)
		seen[g.ServiceAccount()] = true
	}
}

func TestTheReadOnlyRoleCannotWriteOrReadSecrets(t *testing.T) {
	doctor := shippedRBAC(t).clusterRoles["kubectl-lanaccess-doctor"]
	require.NotNil(t, doctor)
	for _, r := range doctor.Rules {
		for _, res := range r.Resources {
			assert.NotEqual(t, "secrets", res)
			assert.NotContains(t, res, "/", "no subresource (exec, proxy) in the read-only role: %v", r)
		}
		for _, v := range r.Verbs {
			if v == "create" {
				assert.Equal(t, []string{"selfsubjectaccessreviews"}, r.Resources, "the only create is an access review")
				continue
			}
			assert.Contains(t, []string{"get", "list"}, v, "rule %v", r)
		}
	}
}

// The Job's namespace runs nothing privileged; the helpers' namespace is privileged (the only
// level that admits hostNetwork) and narrowed by the shipped admission policy, bound to it.
func TestTheNamespacesAdmitWhatRunsThereAndNoMore(t *testing.T) {
	o := shippedRBAC(t)
	job := o.namespaces["lanaccess"]
	require.NotNil(t, job)
	assert.Equal(t, "restricted", job.Labels["pod-security.kubernetes.io/enforce"])
	helpers := o.namespaces[podexec.DefaultHelperNamespace]
	require.NotNil(t, helpers, "rbac-helpers ships the helper namespace")
	assert.Equal(t, "privileged", helpers.Labels["pod-security.kubernetes.io/enforce"])
	assert.NotContains(t, helpers.Labels, podexec.HelperOwnersLabel, "the owner-naming shape is the administrator's choice")

	require.Len(t, o.policies, 1)
	require.Len(t, o.policyBindings, 1)
	p, b := o.policies[0], o.policyBindings[0]
	assert.Equal(t, p.Name, b.Spec.PolicyName)
	assert.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, b.Spec.ValidationActions)
	assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": podexec.DefaultHelperNamespace}, b.Spec.MatchResources.NamespaceSelector.MatchLabels)
	assert.Equal(t, admissionregistrationv1.Fail, *p.Spec.FailurePolicy)
	var all string
	for _, v := range p.Spec.Validations {
		all += v.Expression + "\n"
	}
	assert.Contains(t, all, "@"+podexec.HelperImageDigest, "the policy pins the digest the helper pod uses")
	assert.Contains(t, all, "'"+podexec.ManagedByLabel+"'")
	assert.Contains(t, p.Spec.Variables[0].Expression, "'"+podexec.HelperOwnersLabel+"'] == '"+podexec.HelperOwnersAllowed+"'")
}

// The namespace of the Job and hooks enforces restricted: their pods, with and without the CA
// ConfigMap, pass Pod Security admission's own restricted checks.
func TestTheJobAndHooksPassTheRestrictedLevelOfTheirNamespace(t *testing.T) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	require.NoError(t, err)
	for _, name := range inCluster {
		for _, o := range []Options{{}, {CAConfigMap: "proxy-ca"}} {
			if strings.HasSuffix(name, "-vpn") && o.CAConfigMap != "" {
				continue // vpn-trace takes no CA (TestTheVPNVariantsRunVPNTraceAsTheExecGrant)
			}
			spec := renderPod(t, name, o)
			for _, r := range ev.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &metav1.ObjectMeta{}, &spec) {
				assert.True(t, r.Allowed, "%s %+v: %s: %s", name, o, r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
	}
}
