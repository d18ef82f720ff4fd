// Package chartproof renders the Traefik chart with the values pkg/migrate prints: a package of
// its own because importing Helm registers the CRD type in client-go's scheme, which the fake
// clientset of pkg/migrate's other tests then refuses.
package chartproof

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/migrate"
)

// seedValues are the release's values as the seed installs Traefik: a ClusterIP Service with
// the node addresses as externalIPs (chart 41 renders service.spec into the Service's spec).
const seedValues = `
service:
  spec:
    type: ClusterIP
    externalIPs: [10.0.10.11, 10.0.10.12, 10.0.10.13]
`

// renderTraefik renders the real chart (testdata/charts/traefik-41.3.0) with Helm's engine as
// `helm upgrade --reuse-values -f FILE` would: the release's values, the file's merged over
// them, checked against the chart's values.schema.json; it returns the rendered files.
func renderTraefik(t *testing.T, release map[string]any, file map[string]any) map[string]string {
	t.Helper()
	out, err := tryRenderTraefik(release, file)
	require.NoError(t, err, "the values pass the chart's schema and render")
	return out
}

func tryRenderTraefik(release map[string]any, file map[string]any) (map[string]string, error) {
	c, err := loader.LoadDir("testdata/charts/" + migrate.VerifiedTraefikChart)
	if err != nil {
		return nil, err
	}
	vals := chartutil.CoalesceTables(file, release)
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "traefik", Namespace: "traefik", IsUpgrade: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, rv)
}

// The schema check is real: a key the chart does not know is refused, so the values the plans
// print passing it means the chart knows every key.
func TestTheChartRefusesAKeyItDoesNotKnow(t *testing.T) {
	_, err := tryRenderTraefik(valuesOf(t, seedValues), valuesOf(t, "updateStrategy: {rollingUpdate: {maxSurge: 0}, maxSurgeTypo: 1}\n"))
	require.ErrorContains(t, err, "additional properties 'maxSurgeTypo' not allowed")
}

func valuesOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(text), &m))
	return m
}

// The values the plan prints for a Traefik release, rendered by the real chart: the chart
// renders a DaemonSet (no Deployment) whose container ports web and websecure have hostPorts
// 80 and 443, pinned to the address nodes, rolling one node at a time; the Service keeps its
// externalIPs until the cut-over, and the cut-over's --set KEY=null removes them.
func TestTraefikChartRendersTheHostPortValues(t *testing.T) {
	cs, dc, err := fixture.Clients(builtinObjects(t, helmProxy(t)))
	require.NoError(t, err)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	p, err := migrate.Generate(s, migrate.HostPort)
	require.NoError(t, err)
	require.NotNil(t, p.Values)
	assert.True(t, p.Values.Verified)
	assert.Equal(t, "service.spec.externalIPs", p.Values.ExternalIPsKey)

	printed := printedValues(t, p)
	release := valuesOf(t, seedValues)
	out := renderTraefik(t, release, valuesOf(t, printed))

	assert.Empty(t, strings.TrimSpace(out["traefik/templates/deployment.yaml"]), "no Deployment once kind is DaemonSet")
	var ds appsv1.DaemonSet
	require.NoError(t, yaml.Unmarshal([]byte(out["traefik/templates/daemonset.yaml"]), &ds))
	require.Equal(t, "DaemonSet", ds.Kind)
	hostPorts := map[string]int32{}
	for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
		hostPorts[p.Name] = p.HostPort
	}
	assert.Equal(t, int32(80), hostPorts["web"])
	assert.Equal(t, int32(443), hostPorts["websecure"])
	assert.Zero(t, hostPorts["traefik"], "the dashboard's port stays off the nodes")
	terms := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Len(t, terms, 3, "one term per node")
	for i, n := range []string{"node-1", "node-2", "node-3"} {
		assert.Equal(t, []string{n}, terms[i].MatchFields[0].Values)
	}
	assert.Equal(t, int32(0), ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntVal)
	assert.Equal(t, int32(1), ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntVal)

	svc := renderedService(t, out)
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, svc.Spec.ExternalIPs, "step one keeps the old path")

	// The cut-over: helm upgrade --reuse-values --set service.spec.externalIPs=null.
	after := chartutil.CoalesceTables(valuesOf(t, printed), release)
	cut := setNull(after, p.Values.ExternalIPsKey)
	out = renderTraefik(t, cut, map[string]any{})
	svc = renderedService(t, out)
	assert.Empty(t, svc.Spec.ExternalIPs, "the cut-over removes the externalIPs")
	require.NoError(t, yaml.Unmarshal([]byte(out["traefik/templates/daemonset.yaml"]), &ds))
	assert.Equal(t, "DaemonSet", ds.Kind, "and keeps the DaemonSet")
}

// builtinObjects are the healthy fixture's objects with overlay, without the custom resources
// and their CRDs: importing Helm registers the CRD type in client-go's scheme, which the fake
// clientset then refuses to serve; the chart's test needs none of them.
func builtinObjects(t *testing.T, overlay string) []runtime.Object {
	t.Helper()
	objs, err := fixture.Load("../../../testdata/fixtures/healthy")
	require.NoError(t, err)
	more, err := fixture.Decode("overlay", []byte(overlay))
	require.NoError(t, err)
	objs, err = fixture.Overlay(append(objs, more...)...)
	require.NoError(t, err)
	out := objs[:0]
	for _, o := range objs {
		switch o.(type) {
		case *unstructured.Unstructured, *apiextensionsv1.CustomResourceDefinition:
			continue
		}
		out = append(out, o)
	}
	return out
}

// The values the ServiceLB plan prints for a Traefik release on k3s, rendered by the real
// chart: the release's Service becomes type LoadBalancer in ServiceLB's pool, keeps its
// externalIPs until the cut-over, and loses them with the cut-over's --set; the workload stays
// a Deployment.
func TestTraefikChartRendersTheServiceLBValues(t *testing.T) {
	nodes := ""
	for n := 1; n <= 3; n++ {
		nodes += fmt.Sprintf(`---
apiVersion: v1
kind: Node
metadata:
  name: node-%d
  annotations: {k3s.io/node-args: '["server"]'}
status:
  addresses: [{type: InternalIP, address: 10.0.10.1%d}]
  conditions: [{type: Ready, status: "True"}]
`, n, n)
	}
	cs, dc, err := fixture.Clients(builtinObjects(t, helmProxy(t)+"\n"+nodes))
	require.NoError(t, err)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	p, err := migrate.Generate(s, migrate.ServiceLB)
	require.NoError(t, err)
	require.NotNil(t, p.Values)
	printed := printedValues(t, p)
	release := valuesOf(t, seedValues)
	out := renderTraefik(t, release, valuesOf(t, printed))
	svc := renderedService(t, out)
	assert.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
	assert.Equal(t, migrate.LBPool, svc.Labels["svccontroller.k3s.cattle.io/lbpool"])
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, svc.Spec.ExternalIPs, "step one keeps the old path")
	assert.NotEmpty(t, strings.TrimSpace(out["traefik/templates/deployment.yaml"]), "the workload stays a Deployment")

	cut := setNull(chartutil.CoalesceTables(valuesOf(t, printed), release), p.Values.ExternalIPsKey)
	svc = renderedService(t, renderTraefik(t, cut, map[string]any{}))
	assert.Empty(t, svc.Spec.ExternalIPs)
	assert.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
}

// The values the Cilium node IPAM plan prints for a Traefik release, rendered by the real
// chart: the release's Service becomes a LoadBalancer of class io.cilium/node with the
// node-selecting annotation, externalTrafficPolicy Cluster, its externalIPs kept until the
// cut-over.
func TestTraefikChartRendersTheCiliumNodeIPAMValues(t *testing.T) {
	const cilium = `---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cilium, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: cilium}}
  template:
    metadata: {labels: {k8s-app: cilium}}
    spec:
      containers: [{name: cilium-agent, image: quay.io/cilium/cilium:v1.18.4}]
`
	cs, dc, err := fixture.Clients(builtinObjects(t, helmProxy(t)+"\n"+cilium))
	require.NoError(t, err)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	p, err := migrate.Generate(s, migrate.CiliumNodeIPAM)
	require.NoError(t, err)
	require.NotNil(t, p.Values)
	printed := printedValues(t, p)
	out := renderTraefik(t, valuesOf(t, seedValues), valuesOf(t, printed))
	svc := renderedService(t, out)
	assert.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
	require.NotNil(t, svc.Spec.LoadBalancerClass)
	assert.Equal(t, "io.cilium/node", *svc.Spec.LoadBalancerClass)
	assert.Equal(t, corev1.ServiceExternalTrafficPolicyCluster, svc.Spec.ExternalTrafficPolicy)
	assert.Equal(t, "kubernetes.io/hostname in (node-1,node-2,node-3)", svc.Annotations["io.cilium.nodeipam/match-node-labels"])
	assert.Len(t, svc.Spec.ExternalIPs, 3, "step one keeps the old path")
}

// printedValues is the values file a plan's Helm step writes (the text of its heredoc).
func printedValues(t *testing.T, p *migrate.Plan) string {
	t.Helper()
	for _, st := range p.Steps {
		for _, cmd := range st.Commands {
			if strings.HasPrefix(cmd, "cat > "+migrate.ValuesFile) {
				return strings.TrimSuffix(strings.SplitN(cmd, "\n", 2)[1], "\nEOF")
			}
		}
	}
	t.Fatal("the plan writes no values file")
	return ""
}

// setNull is --set KEY=null over vals: Helm deletes a key whose value is null when it
// coalesces (pkg/chartutil coalesce.go).
func setNull(vals map[string]any, key string) map[string]any {
	b, _ := json.Marshal(vals)
	var cp map[string]any
	_ = json.Unmarshal(b, &cp)
	m := cp
	parts := strings.Split(key, ".")
	for _, k := range parts[:len(parts)-1] {
		m = m[k].(map[string]any)
	}
	m[parts[len(parts)-1]] = nil
	return cp
}

func renderedService(t *testing.T, out map[string]string) corev1.Service {
	t.Helper()
	for doc := range strings.SplitSeq(out["traefik/templates/service.yaml"], "\n---") {
		var svc corev1.Service
		require.NoError(t, yaml.Unmarshal([]byte(doc), &svc))
		if svc.Kind == "Service" {
			return svc
		}
	}
	t.Fatal("the chart rendered no Service")
	return corev1.Service{}
}

// helmProxy is an overlay that makes the fixture's Traefik a Helm release of chart traefik-41.3.0.
func helmProxy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/helm-proxy.yaml")
	require.NoError(t, err)
	return string(b)
}
