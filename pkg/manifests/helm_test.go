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
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// helmTemplate renders the helm-test recipe with real Helm's engine (helm.sh/helm/v3, what
// `helm template` and `helm test` run) as templates/tests/lanaccess.yaml of a chart installed
// as release in namespace, with values.
func helmTemplate(t *testing.T, o Options, release, namespace string, values map[string]any) []byte {
	t.Helper()
	raw, err := Render("helm-test", o)
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
	objs := decodeDocs(t, "helm-test", helmTemplate(t, Options{}, "edge", "traefik", nil))
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

	objs = decodeDocs(t, "helm-test", helmTemplate(t, Options{}, "dns", "lan-dns", map[string]any{"lanaccess": map[string]any{"image": "registry.lan/kubectl-lanaccess:v9"}}))
	pod = objs[2].(*corev1.Pod)
	assert.Equal(t, "registry.lan/kubectl-lanaccess:v9", pod.Spec.Containers[0].Image, "the image comes from the values")
	assert.Equal(t, "lan-dns/dns-lanaccess-doctor", pod.Namespace+"/"+pod.Name)

	pod = decodeDocs(t, "helm-test", helmTemplate(t, Options{CAConfigMap: "proxy-ca"}, "edge", "traefik", nil))[2].(*corev1.Pod)
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
