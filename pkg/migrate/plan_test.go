package migrate

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

const healthy = "../../testdata/fixtures/healthy"

func TestHostPortPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		overlay string
		// err is part of the refusal; "" means a plan.
		err string
		// helm: the proxy's part is chart values; objects: the new objects' references.
		helm    bool
		objects []string
		note    string
	}{
		{
			name:    "plain manifests",
			objects: []string{"DaemonSet traefik/traefik-hostport", "Service traefik/traefik-hostport", "DaemonSet lan-dns/lan-dns-hostport", "Service lan-dns/lan-dns-hostport"},
		},
		{
			name:    "Helm-managed proxy: values, and the DNS as manifests",
			overlay: helmProxy(t),
			helm:    true,
			objects: []string{"DaemonSet lan-dns/lan-dns-hostport", "Service lan-dns/lan-dns-hostport"},
		},
		{
			name: "a tainted node gets its toleration",
			overlay: `
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {kubernetes.io/hostname: node-2, kubernetes.io/os: linux}}
spec:
  taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
status:
  addresses: [{type: InternalIP, address: 10.0.10.12}]
  conditions: [{type: Ready, status: "True"}]
`,
			objects: []string{"DaemonSet traefik/traefik-hostport", "Service traefik/traefik-hostport", "DaemonSet lan-dns/lan-dns-hostport", "Service lan-dns/lan-dns-hostport"},
			note:    "node-role.kubernetes.io/control-plane:NoSchedule on node-2",
		},
		{
			name: "the lists differ",
			overlay: `
apiVersion: v1
kind: Service
metadata: {name: lan-dns, namespace: lan-dns}
spec:
  selector: {app: lan-dns}
  externalIPs: [10.0.10.11, 10.0.10.12]
  ports:
    - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
    - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
`,
			err: "differ",
		},
		{
			name: "an address no node carries",
			overlay: `
apiVersion: v1
kind: Node
metadata: {name: node-3, annotations: {fixture.lanaccess.test/delete: "true"}}
`,
			err: "10.0.10.13 is no node's InternalIP",
		},
		{
			name: "a Service without externalIPs",
			overlay: `
apiVersion: v1
kind: Service
metadata: {name: traefik, namespace: traefik}
spec:
  selector: {app.kubernetes.io/name: traefik, app.kubernetes.io/instance: traefik-traefik}
  ports:
    - {name: websecure, port: 443, targetPort: websecure}
`,
			err: "no externalIPs",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := kube.Selection{}
			if tc.err == "no externalIPs" {
				sel.ProxyService = "traefik/traefik"
			}
			s := discover(t, tc.overlay, sel)
			p, err := Generate(s, HostPort)
			if tc.err != "" {
				require.Error(t, err)
				var perr *Error
				require.ErrorAs(t, err, &perr, "a refusal is a usage error (exit 2)")
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			var refs []string
			for _, o := range p.Objects {
				refs = append(refs, refOf(o))
			}
			assert.Equal(t, tc.objects, refs)
			assert.Equal(t, tc.helm, p.Values != nil)
			assert.Contains(t, p.ZoneAnswers, "does not change")
			if tc.note != "" {
				assert.Contains(t, strings.Join(p.Notes, "\n"), tc.note)
			}
			for _, o := range p.Objects {
				ds, ok := o.(*appsv1.DaemonSet)
				if !ok {
					continue
				}
				assertHostPortDaemonSet(t, ds, s)
			}
		})
	}
}

// assertHostPortDaemonSet: every port of the old Service is a hostPort of the same number on
// the container port its targetPort names, the pods are pinned to the address nodes, the
// rollout never surges, and the selector selects only new pods.
func assertHostPortDaemonSet(t *testing.T, ds *appsv1.DaemonSet, s *kube.Setup) {
	t.Helper()
	old := s.ProxyService
	if strings.HasPrefix(ds.Name, s.DNSService.Name) {
		old = s.DNSService
	}
	hostPorts := map[string]int32{}
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				hostPorts[string(p.Protocol)+"/"+p.Name] = p.HostPort
			}
		}
	}
	assert.Len(t, hostPorts, len(old.Spec.Ports), "one hostPort per Service port")
	for _, sp := range old.Spec.Ports {
		found := false
		for k, v := range hostPorts {
			found = found || (v == sp.Port && strings.HasPrefix(k, string(sp.Protocol)+"/"))
		}
		assert.True(t, found, "port %d/%s", sp.Port, sp.Protocol)
	}
	// One term per node (terms are ORed): the API server allows one value per field selector
	// requirement (pkg/apis/core/validation ValidateNodeFieldSelectorRequirement; the lab's
	// API server refused a list).
	terms := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Len(t, terms, 3)
	for i, n := range []string{"node-1", "node-2", "node-3"} {
		assert.Equal(t, []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}, terms[i].MatchFields)
	}
	assert.Equal(t, int32(0), ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntVal)
	assert.Equal(t, int32(1), ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntVal)
	assert.Equal(t, string(HostPort), ds.Spec.Selector.MatchLabels[MigratedLabel])
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labelsOf(ds.Spec.Template.Labels)), "the selector matches its template")
	assert.Empty(t, ds.Spec.Template.Spec.TopologySpreadConstraints)
}

// discover models the healthy fixture with overlay as doctor's discovery does.
func discover(t *testing.T, overlay string, sel kube.Selection) *kube.Setup {
	t.Helper()
	objs, err := fixture.Load(healthy)
	require.NoError(t, err)
	if overlay != "" {
		more, err := fixture.Decode("overlay", []byte(overlay))
		require.NoError(t, err)
		objs, err = fixture.Overlay(append(objs, more...)...)
		require.NoError(t, err)
	}
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, sel)
	require.NoError(t, err)
	return s
}

type labelsOf map[string]string

func (l labelsOf) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelsOf) Get(k string) string            { return l[k] }
func (l labelsOf) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// A node affinity the pods already require stays required on every node's term.
func TestPinToNodesKeepsTheTemplatesRequirements(t *testing.T) {
	linux := corev1.NodeSelectorRequirement{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}
	spec := corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{linux}}}},
	}}}
	pinToNodes(&spec, []string{"node-1", "node-2"})
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Len(t, terms, 2)
	for i, n := range []string{"node-1", "node-2"} {
		assert.Equal(t, []corev1.NodeSelectorRequirement{linux}, terms[i].MatchExpressions)
		assert.Equal(t, []string{n}, terms[i].MatchFields[0].Values)
	}
}

func TestParseForm(t *testing.T) {
	f, err := ParseForm("HostPort")
	require.NoError(t, err)
	assert.Equal(t, HostPort, f)
	_, err = ParseForm("metallb")
	require.ErrorContains(t, err, "nodes' own LAN addresses")
	_, err = ParseForm("nodeport")
	require.ErrorContains(t, err, "not a form")
}

// helmProxy is an overlay that makes the fixture's Traefik a Helm release of chart traefik-41.3.0.
func helmProxy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("chartproof/testdata/helm-proxy.yaml")
	require.NoError(t, err)
	return string(b)
}

// k3sNodes are the fixture's nodes as k3s writes them: its arguments in the annotation
// k3s.io/node-args (k3s pkg/nodeconfig), extra is appended to node-1's.
func k3sNodes(extra, node3Address string) string {
	docs := make([]string, 0, 3)
	for i, args := range []string{`["server"` + extra + `]`, `["agent"]`, `["agent"]`} {
		n := i + 1
		addrs := fmt.Sprintf("    - {type: InternalIP, address: 10.0.10.1%d}\n", n)
		if n == 3 && node3Address != "" {
			addrs += "    - " + node3Address + "\n"
		}
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: node-%d
  labels: {kubernetes.io/hostname: node-%d, kubernetes.io/os: linux}
  annotations: {k3s.io/node-args: '%s'}
status:
  addresses:
%s  conditions:
    - {type: Ready, status: "True"}
`, n, n, args, addrs))
	}
	return strings.Join(docs, "---\n")
}

func TestServiceLBPlan(t *testing.T) {
	for _, tc := range []struct {
		name, overlay, err string
		helm               bool
		objects            []string
	}{
		{name: "k3s with ServiceLB", overlay: k3sNodes("", ""), objects: []string{"Service traefik/traefik-lb", "Service lan-dns/lan-dns-lb"}},
		{name: "not k3s", err: "not a k3s node"},
		{name: "ServiceLB disabled", overlay: k3sNodes(`, "--disable", "traefik,servicelb"`, ""), err: "--disable servicelb"},
		{name: "a node with an ExternalIP", overlay: k3sNodes("", "{type: ExternalIP, address: 198.51.100.7}"), err: "ServiceLB publishes the nodes' ExternalIPs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := discover(t, tc.overlay, kube.Selection{})
			p, err := Generate(s, ServiceLB)
			if tc.err != "" {
				var perr *Error
				require.ErrorAs(t, err, &perr)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			refs := make([]string, 0, len(p.Objects))
			for _, o := range p.Objects {
				refs = append(refs, refOf(o))
				svc := o.(*corev1.Service)
				old := s.ProxyService
				if svc.Namespace == s.DNSService.Namespace && strings.HasPrefix(svc.Name, s.DNSService.Name) {
					old = s.DNSService
				}
				assert.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
				assert.Empty(t, svc.Spec.ExternalIPs)
				assert.Equal(t, old.Spec.Selector, svc.Spec.Selector, "the same pods")
				assert.Equal(t, LBPool, svc.Labels[lbPoolLabel])
				assert.Len(t, svc.Spec.Ports, len(old.Spec.Ports))
			}
			assert.Equal(t, tc.objects, refs)
			assert.Contains(t, p.ZoneAnswers, "ServiceLB's pods run on exactly the nodes")
			var cmds []string
			for _, st := range p.Steps {
				cmds = append(cmds, st.Commands...)
			}
			all := strings.Join(cmds, "\n")
			for _, n := range []string{"node-1", "node-2", "node-3"} {
				assert.Contains(t, all, "kubectl label node "+n+" svccontroller.k3s.cattle.io/enablelb=true svccontroller.k3s.cattle.io/lbpool=lanaccess --overwrite")
			}
			assert.Contains(t, all, "kubectl lanaccess doctor --proxy-service traefik/traefik-lb --dns-service lan-dns/lan-dns-lb")
		})
	}
}

// cilium is Cilium's agent DaemonSet and its configuration, as discovery finds them.
const cilium = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cilium, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: cilium}}
  template:
    metadata: {labels: {k8s-app: cilium}}
    spec:
      containers: [{name: cilium-agent, image: quay.io/cilium/cilium:v1.18.4}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {kube-proxy-replacement: "true", enable-node-ipam: "true"}
`

func TestCiliumNodeIPAMPlan(t *testing.T) {
	for _, tc := range []struct {
		name, overlay, err, selector string
	}{
		{name: "by the nodes' hostname labels", overlay: cilium, selector: "kubernetes.io/hostname in (node-1,node-2,node-3)"},
		{name: "no Cilium", err: "Cilium does not run"},
		{name: "a node excluded from load balancers", overlay: cilium + `---
apiVersion: v1
kind: Node
metadata:
  name: node-2
  labels: {kubernetes.io/hostname: node-2, node.kubernetes.io/exclude-from-external-load-balancers: ""}
status:
  addresses: [{type: InternalIP, address: 10.0.10.12}]
  conditions: [{type: Ready, status: "True"}]
`, err: "node IPAM skips it"},
		{name: "nodes without hostname labels get one of ours", overlay: cilium + `---
apiVersion: v1
kind: Node
metadata: {name: node-3}
status:
  addresses: [{type: InternalIP, address: 10.0.10.13}]
  conditions: [{type: Ready, status: "True"}]
`, selector: "lanaccess.io/lan-entry=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := discover(t, tc.overlay, kube.Selection{})
			p, err := Generate(s, CiliumNodeIPAM)
			if tc.err != "" {
				var perr *Error
				require.ErrorAs(t, err, &perr)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, p.Objects, 2)
			for _, o := range p.Objects {
				svc := o.(*corev1.Service)
				assert.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
				require.NotNil(t, svc.Spec.LoadBalancerClass)
				assert.Equal(t, "io.cilium/node", *svc.Spec.LoadBalancerClass)
				assert.Equal(t, tc.selector, svc.Annotations["io.cilium.nodeipam/match-node-labels"])
				assert.Equal(t, corev1.ServiceExternalTrafficPolicyCluster, svc.Spec.ExternalTrafficPolicy, "Local would publish only the nodes with an endpoint")
				assert.Empty(t, svc.Spec.ExternalIPs)
			}
			var all []string
			for _, st := range p.Steps {
				all = append(all, st.Commands...)
			}
			joined := strings.Join(all, "\n")
			assert.Contains(t, joined, "kubectl -n kube-system get configmap cilium-config -o 'jsonpath={.data.enable-node-ipam}'")
			assert.Equal(t, strings.HasPrefix(tc.selector, "lanaccess.io"), strings.Contains(joined, "kubectl label node node-1 lanaccess.io/lan-entry=true --overwrite"))
		})
	}
}
