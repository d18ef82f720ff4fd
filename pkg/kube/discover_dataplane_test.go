package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// calicoNode is calico-node's DaemonSet, with env on its container.
func calicoNode(env ...corev1.EnvVar) *appsv1.DaemonSet {
	ds := daemonSet("calico-system", "calico-node")
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "calico-node", Image: "quay.io/calico/node:v3.31.0", Env: env}}
	return ds
}

// felixConfiguration is FelixConfiguration name in group/version, with spec as given. The
// field is the one of projectcalico/api pkg/apis/projectcalico/v3/felixconfig.go
// (FelixConfigurationSpec.BPFEnabled, json "bpfEnabled").
func felixConfiguration(apiVersion, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "FelixConfiguration",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

// installation is the operator's Installation default; dataplane "" leaves
// spec.calicoNetwork.linuxDataplane out (tigera/operator api/v1/installation_types.go
// CalicoNetworkSpec.LinuxDataplane, json "linuxDataplane").
func installation(dataplane string) *unstructured.Unstructured {
	network := map[string]any{"bgp": "Enabled"}
	if dataplane != "" {
		network["linuxDataplane"] = dataplane
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
		"metadata": map[string]any{"name": "default"},
		"spec":     map[string]any{"calicoNetwork": network},
	}}
}

func TestDiscoverTellsCalicosDataplaneFromItsResources(t *testing.T) {
	const v3, v1 = "projectcalico.org/v3", "crd.projectcalico.org/v1"
	on := map[string]any{"bpfEnabled": true}
	off := map[string]any{"bpfEnabled": false}
	unset := map[string]any{"logSeverityScreen": "Info"}
	cases := []struct {
		name string
		objs []runtime.Object
		// bpf is the verdict; from, unknown and unmodelled are parts of what is said ("" = empty).
		bpf                       bool
		from, unknown, unmodelled string
		dataplane                 string
	}{
		{name: "FelixConfiguration default bpfEnabled true (v3)",
			objs: []runtime.Object{felixConfiguration(v3, "default", on)},
			bpf:  true, from: "FelixConfiguration default spec.bpfEnabled=true"},
		{name: "FelixConfiguration default bpfEnabled false (v3)",
			objs: []runtime.Object{felixConfiguration(v3, "default", off)},
			from: "FelixConfiguration default spec.bpfEnabled=false"},
		{name: "the CRDs behind the API server (crd.projectcalico.org/v1)",
			objs: []runtime.Object{felixConfiguration(v1, "default", on)},
			bpf:  true, from: "FelixConfiguration default spec.bpfEnabled=true"},
		{name: "a node's FelixConfiguration is not the default",
			objs: []runtime.Object{felixConfiguration(v3, "node.node-1", on), felixConfiguration(v3, "default", unset)},
			from: "FelixConfiguration default does not set bpfEnabled (default false)"},
		{name: "Installation BPF",
			objs: []runtime.Object{installation("BPF"), felixConfiguration(v3, "default", unset)},
			bpf:  true, from: "linuxDataplane=BPF", dataplane: "BPF"},
		{name: "Installation Iptables",
			objs: []runtime.Object{installation("Iptables")},
			from: "linuxDataplane=Iptables", dataplane: "Iptables"},
		{name: "Installation Nftables",
			objs: []runtime.Object{installation("Nftables"), felixConfiguration(v3, "default", unset)},
			from: "linuxDataplane=Nftables", dataplane: "Nftables"},
		{name: "Installation VPP is not modelled",
			objs: []runtime.Object{installation("VPP")},
			from: "linuxDataplane=VPP", unmodelled: "VPP dataplane", dataplane: "VPP"},
		{name: "Installation with a value the operator does not define",
			objs:    []runtime.Object{installation("Userspace")},
			unknown: "none of the operator's values (Iptables, BPF, VPP, Nftables)", dataplane: "Userspace"},
		{name: "Installation leaves linuxDataplane out: the operator's default, Iptables",
			objs: []runtime.Object{installation("")},
			from: "unset (Iptables)"},
		{name: "FelixConfiguration's bpfEnabled wins over the Installation",
			objs: []runtime.Object{installation("Iptables"), felixConfiguration(v3, "default", on)},
			bpf:  true, from: "FelixConfiguration default spec.bpfEnabled=true", dataplane: "Iptables"},
		{name: "neither is installed",
			unknown: "neither FELIX_BPFENABLED on DaemonSet calico-system/calico-node nor a readable FelixConfiguration or Installation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, dc := cluster(t, add(append([]runtime.Object{calicoNode()}, tc.objs...)...))
			s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
			require.NoError(t, err)
			c := s.Dataplane.Calico
			require.NotNil(t, c)
			assert.Equal(t, "DaemonSet calico-system/calico-node", c.Agent)
			assert.Equal(t, tc.bpf, c.BPF)
			assert.Equal(t, tc.dataplane, c.Dataplane)
			assertSays(t, "From", c.From, tc.from)
			assertSays(t, "Unknown", c.Unknown, tc.unknown)
			assertSays(t, "Unmodelled", c.Unmodelled, tc.unmodelled)
		})
	}
}

// assertSays: got contains want, or is empty when want is.
func assertSays(t *testing.T, field, got, want string) {
	t.Helper()
	if want == "" {
		assert.Empty(t, got, field)
		return
	}
	assert.Contains(t, got, want, field)
}

func TestDiscoverRecordsCalicoResourcesAsNotInstalled(t *testing.T) {
	cs, dc := cluster(t, add(calicoNode()))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	keys := kube.CalicoReadKeys()
	require.Len(t, keys, 3, "the Installation and FelixConfiguration in two versions")
	for _, k := range keys {
		installed, known := s.Installed[k]
		assert.True(t, known, "%s is recorded", k)
		assert.False(t, installed, "%s is not installed", k)
		assert.NoError(t, s.Partial[k], "not installed is not a failed read")
	}
	assert.NotEmpty(t, s.Dataplane.Calico.Unknown)
}

func TestDiscoverEnvironmentWinsOverCalicoResources(t *testing.T) {
	cs, dc := cluster(t, add(calicoNode(corev1.EnvVar{Name: "FELIX_BPFENABLED", Value: "false"}),
		installation("BPF"), felixConfiguration("projectcalico.org/v3", "default", map[string]any{"bpfEnabled": true})))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	c := s.Dataplane.Calico
	assert.False(t, c.BPF)
	assert.Equal(t, "DaemonSet calico-system/calico-node env FELIX_BPFENABLED=false", c.From)
	assert.Equal(t, "BPF", c.Dataplane, "the Installation is read all the same")
}

func TestDiscoverSaysWhichCalicoReadFailed(t *testing.T) {
	cs, dc := cluster(t, add(calicoNode(), felixConfiguration("projectcalico.org/v3", "default", map[string]any{"logSeverityScreen": "Info"})))
	dc.PrependReactor("list", "installations", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", nil)
	})
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	c := s.Dataplane.Calico
	assert.False(t, c.BPF)
	assert.Empty(t, c.From, "FelixConfiguration without bpfEnabled says nothing while the Installation is unread")
	assert.Contains(t, c.Unknown, "installations.operator.tigera.io: ")
	assert.Contains(t, c.Unknown, "forbidden")
	require.Error(t, s.Partial[kube.CalicoInstallations().Key()])
}

// ciliumConfig is cilium-config in ns with kube-proxy-replacement as given.
func ciliumConfig(ns, kpr string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{Data: map[string]string{"kube-proxy-replacement": kpr}}
	cm.Namespace, cm.Name = ns, "cilium-config"
	return cm
}

func TestDiscoverReadsCiliumConfigInTheAgentsNamespace(t *testing.T) {
	// A stale cilium-config in kube-system is not the agent's.
	cs, dc := cluster(t, add(daemonSet("cilium", "cilium"), ciliumConfig("cilium", "true"), ciliumConfig("kube-system", "false")))
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	c := s.Dataplane.Cilium
	require.NotNil(t, c)
	assert.Equal(t, kube.CiliumConfig{Object: "ConfigMap cilium/cilium-config", Present: true, Agent: true, KubeProxyReplacement: "true"}, *c)
	assert.Empty(t, s.Dataplane.Unread)
}

func TestDiscoverSaysCiliumConfigIsUnreadNamingTheGrant(t *testing.T) {
	cases := []struct {
		name string
		// forbidden is the namespace whose ConfigMaps cannot be listed.
		forbidden string
		objs      []runtime.Object
		says      []string
		cilium    bool
	}{
		{name: "the agent's namespace", forbidden: "cilium",
			objs:   []runtime.Object{daemonSet("cilium", "cilium"), ciliumConfig("cilium", "true")},
			says:   []string{"ConfigMap cilium/cilium-config could not be read", "runs in namespace cilium", "grant get and list on configmaps in namespace cilium"},
			cilium: true},
		{name: "kube-system with no agent seen is not said", forbidden: "kube-system",
			objs: []runtime.Object{ciliumConfig("kube-system", "true")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, dc := cluster(t, add(tc.objs...))
			cs.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() != tc.forbidden {
					return false, nil, nil
				}
				return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", nil)
			})
			s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
			require.NoError(t, err)
			if !tc.cilium {
				assert.Nil(t, s.Dataplane.Cilium, "no agent (the DaemonSets were read) and no ConfigMap read: no Cilium")
				assert.Empty(t, s.Dataplane.Unread)
				return
			}
			require.NotNil(t, s.Dataplane.Cilium)
			assert.False(t, s.Dataplane.Cilium.Present)
			assert.False(t, s.Dataplane.Cilium.ReplacesKubeProxy(), "unread is never a replacement")
			require.Len(t, s.Dataplane.Unread, 1)
			for _, w := range tc.says {
				assert.Contains(t, s.Dataplane.Unread[0], w)
			}
		})
	}
}

func TestDiscoverSaysCiliumConfigIsUnreadWhenTheDaemonSetsAreUnseen(t *testing.T) {
	cs, dc := cluster(t, add(ciliumConfig("kube-system", "true")))
	cs.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetResource().Resource {
		case "daemonsets":
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", nil)
		case "configmaps":
			if a.GetNamespace() == "kube-system" {
				return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", nil)
			}
		}
		return false, nil, nil
	})
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.Nil(t, s.Dataplane.Cilium)
	require.Len(t, s.Dataplane.Unread, 2, "the DaemonSets, then cilium-config: %q", s.Dataplane.Unread)
	assert.Contains(t, s.Dataplane.Unread[1], "ConfigMap kube-system/cilium-config could not be read (no DaemonSet cilium was seen")
	assert.Contains(t, s.Dataplane.Unread[1], "grant get and list on configmaps in namespace kube-system")
}

// daemonSet is a DaemonSet with a UID, for pods to name as their controller.
func daemonSet(ns, name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
}

// client-go's fake ignores field selectors: the kube-system ConfigMaps of the healthy fixture
// (kube-proxy's) come back from the cilium-config list, and must not pass for Cilium's.
func TestDiscoverTakesNoOtherConfigMapForCiliumConfig(t *testing.T) {
	cs, dc := cluster(t)
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err)
	assert.NotEmpty(t, s.KubeProxyConfig, "the fixture has kube-system/kube-proxy")
	assert.Nil(t, s.Dataplane.Cilium, "no cilium DaemonSet and no cilium-config")
}
