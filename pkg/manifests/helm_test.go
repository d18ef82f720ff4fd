package manifests

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// helmTemplate renders the helm-test recipe name (helm-test, helm-test-vpn) with real Helm's
// engine (helm.sh/helm/v3, what `helm template` and `helm test` run) as
// templates/tests/lanaccess.yaml of a chart installed as release in namespace, with values.
func helmTemplate(t *testing.T, name string, o Options, release, namespace string, values map[string]any) []byte {
	t.Helper()
	raw, err := Render(name, o)
	require.NoError(t, err)
	const file = "templates/tests/lanaccess.yaml"
	c := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "proxy", Version: "0.1.0"},
		Templates: []*chart.File{{Name: file, Data: raw}},
	}
	vals, err := chartutil.ToRenderValues(c, values, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	require.NoError(t, err)
	out, err := engine.Render(c, vals)
	require.NoError(t, err, "%s", raw)
	return []byte(out["proxy/"+file])
}

// The Helm test is the release's: Helm renders it with the release's name and namespace, the
// image from the values (this version's by default), and keeps the pod after it succeeds so
// that `helm test --logs` can read it (helm/helm#9098: hook-succeeded deletes it first).
func TestTheHelmTestIsRenderedByHelmFromTheRelease(t *testing.T) {
	objs := decodeDocs(t, "helm-test", helmTemplate(t, "helm-test", Options{}, "edge", "traefik", nil))
	require.Len(t, objs, 3)
	sa, ok := objs[0].(*corev1.ServiceAccount)
	require.True(t, ok, "%T", objs[0])
	assert.Equal(t, "traefik/edge-lanaccess", sa.Namespace+"/"+sa.Name)
	crb, ok := objs[1].(*rbacv1.ClusterRoleBinding)
	require.True(t, ok, "%T", objs[1])
	assert.Equal(t, shippedClusterRole(t, "rbac-doctor"), crb.RoleRef.Name, "rbac-doctor's ClusterRole")
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "edge-lanaccess", Namespace: "traefik"}}, crb.Subjects)
	pod, ok := objs[2].(*corev1.Pod)
	require.True(t, ok, "%T", objs[2])
	assert.Equal(t, "traefik/edge-lanaccess-doctor", pod.Namespace+"/"+pod.Name)
	assert.Equal(t, "test", pod.Annotations["helm.sh/hook"])
	policies := strings.Split(pod.Annotations["helm.sh/hook-delete-policy"], ",")
	assert.Equal(t, []string{"before-hook-creation"}, policies, "the pod outlives a success, so --logs reads it")
	assert.Equal(t, sa.Name, pod.Spec.ServiceAccountName)
	assert.Equal(t, version.Image(), pod.Spec.Containers[0].Image)

	objs = decodeDocs(t, "helm-test", helmTemplate(t, "helm-test", Options{}, "dns", "lan-dns", map[string]any{"lanaccess": map[string]any{"image": "registry.lan/kubectl-lanaccess:v9"}}))
	pod = objs[2].(*corev1.Pod)
	assert.Equal(t, "registry.lan/kubectl-lanaccess:v9", pod.Spec.Containers[0].Image, "the image comes from the values")
	assert.Equal(t, "lan-dns/dns-lanaccess-doctor", pod.Namespace+"/"+pod.Name)

	pod = decodeDocs(t, "helm-test", helmTemplate(t, "helm-test", Options{CAConfigMap: "proxy-ca"}, "edge", "traefik", nil))[2].(*corev1.Pod)
	require.Len(t, pod.Spec.Volumes, 1)
	assert.Equal(t, "proxy-ca", pod.Spec.Volumes[0].ConfigMap.Name)
	assert.True(t, slices.Contains(pod.Spec.Containers[0].Args, "--ca-file"))
}

// shippedClusterRole is the name of the one ClusterRole the bundle name ships.
func shippedClusterRole(t *testing.T, name string) string {
	t.Helper()
	var names []string
	for _, obj := range decodeAll(t, name) {
		if r, ok := obj.(*rbacv1.ClusterRole); ok {
			names = append(names, r.Name)
		}
	}
	require.Len(t, names, 1, "%s ships one ClusterRole", name)
	return names[0]
}

// shippedObjects decodes the bundle name's ServiceAccount and Role (each exactly one).
func shippedObjects(t *testing.T, name string) (*corev1.ServiceAccount, *rbacv1.Role) {
	t.Helper()
	var sa *corev1.ServiceAccount
	var role *rbacv1.Role
	for _, obj := range decodeAll(t, name) {
		switch v := obj.(type) {
		case *corev1.ServiceAccount:
			require.Nil(t, sa, "%s ships one ServiceAccount", name)
			sa = v
		case *rbacv1.Role:
			require.Nil(t, role, "%s ships one Role", name)
			role = v
		}
	}
	require.NotNil(t, sa, name)
	require.NotNil(t, role, name)
	return sa, role
}

// vpnArgs are the vpn-trace recipes' arguments with -n's and -o's values blanked: the rest must
// be the same in every variant.
func vpnArgs(t *testing.T, args []string, namespace string) []string {
	t.Helper()
	out := slices.Clone(args)
	i := slices.Index(out, "-n")
	require.GreaterOrEqual(t, i, 0, "%v", args)
	assert.Equal(t, namespace, out[i+1], "the VPN pods' namespace")
	out[i+1] = "NS"
	out[slices.Index(out, "-o")+1] = "OUTPUT"
	if i := slices.Index(out, "--log-file"); i >= 0 {
		out = slices.Delete(out, i, i+2) // the Job's (TestTheJobKeepsItsReportInThePodLog)
	}
	return out
}

// The vpn-trace variants of the Job and the Argo CD hook run in the lanaccess namespace as the
// ServiceAccount of the opt-in exec grant (rbac-vpn-exec), on the namespace its Role grants
// exec in, VPN001 and VPN002 only; --ca-configmap is refused (vpn-trace reads no certificate).
func TestTheVPNVariantsRunVPNTraceAsTheExecGrant(t *testing.T) {
	sa, role := shippedObjects(t, "rbac-vpn-exec")
	want := []string{"vpn-trace", "-n", "NS", "--only", "VPN001,VPN002", "--wait", "3m", "-o", "OUTPUT"}
	for _, name := range []string{"job-vpn", "argocd-vpn"} {
		objs := decodeAll(t, name)
		spec, annotations := podOf(t, name, objs)
		job := objs[0].(*batchv1.Job)
		assert.Equal(t, sa.Namespace, job.Namespace, name)
		assert.Equal(t, sa.Name, spec.ServiceAccountName, "%s runs as rbac-vpn-exec's ServiceAccount", name)
		require.Len(t, spec.Containers, 1)
		c := spec.Containers[0]
		assert.Equal(t, []string{"kubectl-lanaccess"}, c.Command)
		assert.Equal(t, want, vpnArgs(t, c.Args, role.Namespace), name)
		if name == "argocd-vpn" {
			assert.Equal(t, "PostSync", annotations["argocd.argoproj.io/hook"])
		}
		_, err := Render(name, Options{CAConfigMap: "proxy-ca"})
		assert.ErrorContains(t, err, "reads no proxy certificate")
	}
}

// The VPN chart's Helm test, rendered by real Helm for a release: the release's ServiceAccount
// gets rbac-vpn-exec's Role (the same rules) in the release's namespace only, and rbac-doctor's
// read-only ClusterRole; the pod runs vpn-trace on the release's namespace and outlives a success.
func TestTheVPNHelmTestIsTheExecGrantOfTheRelease(t *testing.T) {
	_, shipped := shippedObjects(t, "rbac-vpn-exec")
	objs := decodeDocs(t, "helm-test-vpn", helmTemplate(t, "helm-test-vpn", Options{}, "ovpn", "vpn-prod", nil))
	var sa *corev1.ServiceAccount
	var role *rbacv1.Role
	var rb *rbacv1.RoleBinding
	var crb *rbacv1.ClusterRoleBinding
	var pod *corev1.Pod
	for _, obj := range objs {
		switch v := obj.(type) {
		case *corev1.ServiceAccount:
			sa = v
		case *rbacv1.Role:
			role = v
		case *rbacv1.RoleBinding:
			rb = v
		case *rbacv1.ClusterRoleBinding:
			crb = v
		case *corev1.Pod:
			pod = v
		}
	}
	require.Len(t, objs, 5)
	require.NotNil(t, sa)
	require.NotNil(t, role)
	require.NotNil(t, rb)
	require.NotNil(t, crb)
	require.NotNil(t, pod)
	assert.Equal(t, "vpn-prod/ovpn-lanaccess-vpn", sa.Namespace+"/"+sa.Name)
	assert.Equal(t, "vpn-prod", role.Namespace)
	assert.Equal(t, shipped.Rules, role.Rules, "rbac-vpn-exec's rules, no more")
	assert.Equal(t, "vpn-prod", rb.Namespace)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, rb.RoleRef)
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: "vpn-prod"}}
	assert.Equal(t, subject, rb.Subjects)
	assert.Equal(t, shippedClusterRole(t, "rbac-doctor"), crb.RoleRef.Name)
	assert.Equal(t, subject, crb.Subjects)
	assert.Equal(t, "vpn-prod/ovpn-lanaccess-vpn-trace", pod.Namespace+"/"+pod.Name)
	assert.Equal(t, "test", pod.Annotations["helm.sh/hook"])
	assert.Equal(t, "before-hook-creation", pod.Annotations["helm.sh/hook-delete-policy"])
	assert.Equal(t, sa.Name, pod.Spec.ServiceAccountName)
	want := []string{"vpn-trace", "-n", "NS", "--only", "VPN001,VPN002", "--wait", "3m", "-o", "OUTPUT"}
	assert.Equal(t, want, vpnArgs(t, pod.Spec.Containers[0].Args, "vpn-prod"))
}

// waitArg is the value of --wait in args.
func waitArg(t *testing.T, args []string) string {
	t.Helper()
	i := slices.Index(args, "--wait")
	require.GreaterOrEqual(t, i, 0, "%v", args)
	require.Less(t, i+1, len(args), "%v", args)
	return args[i+1]
}

// Both Helm tests take doctor's (vpn-trace's) --wait from the value lanaccess.wait, 3m when it
// is unset as in the other examples: a chart whose rollout is quick, or a CI that wants the
// failure sooner, sets it. Real Helm renders it; any value, quotes and line breaks included,
// stays the one argument of --wait (Helm's quote), and strict decoding proves the YAML.
func TestTheHelmTestsTakeTheWaitFromTheValues(t *testing.T) {
	hostile := "10s\", \"--kubeconfig\", \"/tmp/x\n\t'\\"
	for _, name := range []string{"helm-test", "helm-test-vpn"} {
		for _, tc := range []struct {
			values map[string]any
			want   string
		}{
			{nil, DefaultWait},
			{map[string]any{"lanaccess": map[string]any{"image": "registry.lan/kubectl-lanaccess:v9"}}, DefaultWait},
			{map[string]any{"lanaccess": map[string]any{"wait": "10s"}}, "10s"},
			{map[string]any{"lanaccess": map[string]any{"wait": 0}}, "0"},
			{map[string]any{"lanaccess": map[string]any{"wait": hostile}}, hostile},
		} {
			objs := decodeDocs(t, name, helmTemplate(t, name, Options{}, "edge", "traefik", tc.values))
			spec, _ := podOf(t, name, objs)
			args := spec.Containers[0].Args
			assert.Equal(t, tc.want, waitArg(t, args), "%s with %v", name, tc.values)
			assert.Equal(t, "-o", args[slices.Index(args, "--wait")+2], "%s: --wait's value is one argument: %q", name, args)
		}
	}
	assert.Equal(t, "3m", DefaultWait, "the examples' documented default")
	for _, name := range inCluster {
		assert.Equal(t, DefaultWait, waitArg(t, renderPod(t, name, Options{}).Containers[0].Args), name)
	}
}
