package vpn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// The node-* recordings are the node reader's script run for real (facts/record_test.go):
// node-calico-off in a namespace with ip_forward=1 and the CNI directory holding Calico's
// manifest template (manifests/calico.yaml, calico-config's cni_network_config) rendered as
// install-cni renders it; node-calico-on the same after this package's CNI-level fix;
// node-flannel-initns read from this machine's initial network namespace (ip_forward 0,
// devconf_inherit_init_net 0) with kube-flannel.yml's conflist; node-flannel-childns from a
// namespace that is not the initial one, where the inheritance setting is absent.

// operatorInstallation is Calico operator's Installation, as `kubectl get installation
// default -o yaml` shows it, without containerIPForwarding.
func operatorInstallation() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
		"metadata": map[string]any{"name": "default"},
		"spec":     map[string]any{"calicoNetwork": map[string]any{"bgp": "Enabled"}},
	}}
}

// calicoConfigMap is calico.yaml's calico-config ConfigMap (its cni_network_config template).
func calicoConfigMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "vpn", "calico-config-template.txt"))
	require.NoError(t, err)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "calico-config"},
		Data: map[string]string{"cni_network_config": string(tmpl), "veth_mtu": "0"}}
}

func durabilityOutcome(t *testing.T, f *vpnFixture) (engine.Status, []engine.Finding) {
	t.Helper()
	st, _, fs := f.run(t, VPNDurability(f.env))
	return st, fs
}

func TestAZeroWrittenByCalicoIsSaidWithTheOperatorFixThatRoundTrips(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil, operatorInstallation())
	st, fs := durabilityOutcome(t, f)
	require.Equal(t, engine.StatusFail, st, messages(fs))
	o := byCode(t, fs, "VPN003-ORIGIN-CNI")
	assert.Contains(t, o.Message, "Calico's CNI plugin writes 0 (container_settings.allow_ip_forwarding is not true in node node-1's "+calicoNodeConfDir+"/10-calico.conflist)")
	assert.Contains(t, o.Remediation, `kubectl patch installation.operator.tigera.io default --type=merge -p '{"spec":{"calicoNetwork":{"containerIPForwarding":"Enabled"}}}'`)
	assert.Contains(t, o.Remediation, "kubectl -n vpn rollout restart deployment/openvpn")

	// The operator accepts the patch; the nodes' file is not rewritten until calico-node
	// restarts, which is said.
	applyFix(t, f, o.Remediation)
	inst, err := f.dynamic.Resource(facts.InstallationGVR).Get(t.Context(), "default", metav1.GetOptions{})
	require.NoError(t, err)
	patched := &unstructured.Unstructured{Object: inst.Object}
	patched.SetResourceVersion("")
	f2 := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil, patched)
	_, fs = durabilityOutcome(t, f2)
	drift := byCode(t, fs, "VPN003-CNI-DRIFT")
	assert.Contains(t, drift.Message, `Installation default says containerIPForwarding "Enabled", but node node-1's`)
	assert.Equal(t, "kubectl -n kube-system rollout restart daemonset/calico-node", drift.Remediation)

	// Once calico-node wrote the new file, a new pod starts with 1 and nothing is a hand fix.
	f3 := newVPNFixture(t, vpnScenario{forwarding: "1", node: "node-calico-on"}, nil, patched)
	st, fs = durabilityOutcome(t, f3)
	assert.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, byCode(t, fs, "VPN003-SET-BY-CNI").Message, "Calico's CNI plugin writes 1 (container_settings.allow_ip_forwarding is true in")
}

func TestAManifestInstallGetsTheConfigMapFixWhichRendersTheRecordedFile(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil, calicoConfigMap(t))
	_, fs := durabilityOutcome(t, f)
	o := byCode(t, fs, "VPN003-ORIGIN-CNI")
	assert.Contains(t, o.Remediation, "kubectl -n kube-system patch configmap calico-config --type=merge -p ")
	assert.Contains(t, o.Remediation, "kubectl -n kube-system rollout restart daemonset/calico-node\n"+
		"kubectl -n kube-system rollout status daemonset/calico-node\n", "the VPN pods are replaced once every node has the new file")
	assert.Less(t, strings.Index(o.Remediation, "rollout status daemonset/calico-node"), strings.Index(o.Remediation, "rollout restart deployment/openvpn"))

	applyFix(t, f, o.Remediation)
	cm, err := f.client.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "calico-config", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "0", cm.Data["veth_mtu"], "a merge patch leaves the other keys")
	conf, err := facts.ParseCNITemplate(cm.Data["cni_network_config"])
	require.NoError(t, err, "the patched template still reads as a template")
	require.NotNil(t, conf.Plugins[0].AllowIPForwarding)
	assert.True(t, *conf.Plugins[0].AllowIPForwarding)
	assert.Contains(t, cm.Data["cni_network_config"], `"mtu": __CNI_MTU__`, "install-cni's placeholders are kept")

	// node-calico-on's file is this patched template as install-cni renders it.
	cm.ResourceVersion = ""
	f2 := newVPNFixture(t, vpnScenario{forwarding: "1", node: "node-calico-on"}, nil, cm)
	st, fs := durabilityOutcome(t, f2)
	assert.Equal(t, engine.StatusPass, st, messages(fs))
	byCode(t, fs, "VPN003-SET-BY-CNI")
}

// The lab's run of the fix without waiting for calico-node: the VPN pod was replaced while its
// node still had the old file, so it has 0 though the node's file now says 1.
func TestAZeroOnANodeWhoseCNINowGivesOneSaysTheConfigurationChangedSince(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", node: "node-calico-on"}, nil, calicoConfigMap(t))
	st, fs := durabilityOutcome(t, f)
	assert.Equal(t, engine.StatusFail, st, messages(fs))
	o := byCode(t, fs, "VPN003-ORIGIN-UNKNOWN")
	assert.Contains(t, o.Message, "a new pod here would start with 1 (Calico's CNI plugin writes 1")
	assert.Contains(t, o.Message, "or the node's value or its CNI configuration changed since the pod started")
}

func TestWithoutCalicosClusterConfigurationTheCNIFixIsNotPretended(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	_, fs := durabilityOutcome(t, f)
	o := byCode(t, fs, "VPN003-ORIGIN-CNI")
	assert.Empty(t, o.Remediation)
	assert.Contains(t, o.Message, "Calico's cluster configuration was not found through the API")
	assert.Contains(t, o.Message, "this cannot be proven from here")
}

func TestAZeroInheritedFromTheNodeWithFlannelIsTheNodes(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", node: "node-flannel-initns"}, nil)
	st, fs := durabilityOutcome(t, f)
	require.Equal(t, engine.StatusFail, st, messages(fs))
	o := byCode(t, fs, "VPN003-ORIGIN-NODE")
	assert.Contains(t, o.Message, "a new pod network namespace copies node node-1's IPv4 settings, ip_forward=0 (net.core.devconf_inherit_init_net=0)")
	assert.Empty(t, o.Remediation, "no CNI plugin writes it: there is no CNI-level switch to offer")
}

// The initial namespace of this machine has ip_forward=0 and is shared (the lab's namespaces
// copy it), so a node with 1 read from the initial namespace is the flannel recording's
// parsed facts with the node's value set to 1; the lab reproduces it for real.
func TestAOneInheritedFromTheNodeIsNotAHandFix(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", node: "node-flannel-initns"}, nil)
	p := f.facts(t, facts.NeedForwarding|facts.NeedDurability|facts.NeedOrigin)
	require.Equal(t, "0", p.Node.Forward, "as recorded")
	p.Node.Forward = "1"
	run := &facts.Run{Pods: []*facts.Pod{p}}
	fs := durabilityFindings(run, p, durabilityOf(p))
	set := byCode(t, fs, "VPN003-SET-BY-NODE")
	assert.Equal(t, engine.SeverityInfo, set.Severity)
	assert.Contains(t, set.Message, "inherited by every new pod on this node")
	assert.NotContains(t, messages(fs), "hand fix")
}

func TestAOneFromANodeThatIsNotTheInitialNamespaceIsUnexplainedNotAHandFix(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", node: "node-flannel-childns"}, nil)
	st, fs := durabilityOutcome(t, f)
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	u := byCode(t, fs, "VPN003-UNEXPLAINED-ONE")
	assert.Contains(t, u.Message, "that is not the kernel's initial network namespace (net.core.devconf_inherit_init_net is not there")
	assert.Contains(t, u.Message, "it is a hand fix unless the node or the CNI gives it")
}

func TestANodeWithoutAHostNetworkPodLeavesTheOriginUnknownAndSaysWhy(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", node: "none"}, nil)
	_, fs := durabilityOutcome(t, f)
	o := byCode(t, fs, "VPN003-ORIGIN-UNKNOWN")
	assert.Contains(t, o.Message, "no running pod of a trusted system DaemonSet (kube-system/kube-proxy, ")
	assert.Contains(t, o.Message, ") on node node-1 to read it through")
}

// A tenant's hostNetwork pod answers whatever its image prints: it never answers for the node,
// even when it mounts /etc/cni/net.d and its DaemonSet is named like a CNI's.
func TestATenantsHostNetworkPodNeverAnswersForTheNode(t *testing.T) {
	objs := cniObjects("calico")
	for _, o := range objs {
		m := o.(metav1.Object)
		m.SetNamespace("tenant")
	}
	f := newVPNFixture(t, vpnScenario{forwarding: "0", node: "none"}, nil, objs...)
	_, fs := durabilityOutcome(t, f)
	o := byCode(t, fs, "VPN003-ORIGIN-UNKNOWN")
	assert.Contains(t, o.Message, "no running pod of a trusted system DaemonSet")
	for _, c := range f.exec.Calls() {
		assert.NotEqual(t, "tenant", c.Pod.Namespace, "the tenant's pod is never exec'd into: %v", c)
	}
}

func TestACNIThatIsNotModelledIsSaid(t *testing.T) {
	tuningAfterWeave := `{"name":"weave","cniVersion":"0.3.0","plugins":[{"type":"weave-net"},{"type":"portmap","capabilities":{"portMappings":true}}]}`
	conf, err := facts.ParseCNIConfig(tuningAfterWeave)
	require.NoError(t, err)
	o := originOf(&facts.Run{}, &facts.Pod{Node: facts.NodeRead{Node: "node-1", Forward: "1", Inherit: "0",
		Files: []facts.CNIFile{{Path: "/etc/cni/net.d/10-weave.conflist", Config: conf}}}})
	assert.Equal(t, "1", o.NewPod)
	assert.Contains(t, o.Unknown[0], `the "weave-net" plugin in node node-1's /etc/cni/net.d/10-weave.conflist is not modelled`)
}

func TestTheTuningPluginAfterCalicoHasTheLastWord(t *testing.T) {
	conf, err := facts.ParseCNIConfig(`{"name":"k8s-pod-network","cniVersion":"1.0.0","plugins":[{"type":"calico"},{"type":"tuning","sysctl":{"net.ipv4.ip_forward":"1"}}]}`)
	require.NoError(t, err)
	o := originOf(&facts.Run{}, &facts.Pod{Node: facts.NodeRead{Node: "node-1", Forward: "0", Inherit: "0",
		Files: []facts.CNIFile{{Path: "/etc/cni/net.d/10-calico.conflist", Config: conf}}}})
	assert.Equal(t, "1", o.NewPod)
	assert.True(t, o.ByCNI)
	assert.Contains(t, o.sentence(), "Calico's CNI plugin writes 0")
	assert.Contains(t, o.sentence(), "then the tuning plugin writes 1")
}

func TestForwardingOffNamesTheCNIAndOffersBothFixes(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", nat: "nat-empty"}, nil, operatorInstallation())
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusFail, st)
	assert.Contains(t, v.Message, "every new pod starts so: Calico's CNI plugin writes 0")
	assert.Contains(t, v.Remediation, "kubectl -n vpn patch deployment openvpn --patch-file enable-ip-forward.yaml")
	assert.Contains(t, v.Remediation, "# or, once for the cluster and without privilege, let the CNI write 1:")
	assert.Contains(t, v.Remediation, "containerIPForwarding")
}

func TestAOneTheCNIGivesIsNotTheDurabilityVerdict(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq", node: "node-calico-on"}, nil)
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusPass, st, v.Message)
	assert.Equal(t, "none", v.Evidence["layer"])
	assert.Contains(t, v.Message, "given to every new pod by its node or CNI (Calico's CNI plugin writes 1")
}

func TestTheHandFixSaysAContainerRestartKeepsItAndANewPodDoesNot(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	_, _, fs := f.run(t, VPNForwarding(f.env))
	assert.Contains(t, fs[0].Remediation, "# immediate, for this pod only: it lasts as long as this pod's sandbox (its network namespace): a container restart keeps it, a new pod (a rollout, an eviction, a rescheduling) or a recreated sandbox (a node reboot) starts again")
	assert.NotContains(t, fs[0].Remediation, "lost at the next restart")
}

func TestTheNodeIsReadThroughTheCNIPodThatMountsItsConfiguration(t *testing.T) {
	kubeProxy := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-a1"},
		Spec: corev1.PodSpec{NodeName: "node-1", HostNetwork: true, Containers: []corev1.Container{{Name: "kube-proxy"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "kube-proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil, kubeProxy)
	run, err := f.env.gather(t.Context(), facts.NeedOrigin)
	require.NoError(t, err)
	n := run.Pods[0].Node
	require.NoError(t, n.Err)
	assert.Equal(t, "pod kube-system/calico-node-7xk2p, container calico-node", n.Via, "the pod mounting /etc/cni/net.d comes first")
	assert.Equal(t, "1", n.Forward)
	assert.Empty(t, n.Inherit, "absent outside the initial namespace")
	require.Len(t, n.Files, 1, "calico-kubeconfig is not a CNI configuration")
	assert.Equal(t, calicoNodeConfDir+"/10-calico.conflist", n.Files[0].Path)
	assert.Equal(t, []string{"calico", "portmap"}, []string{n.Files[0].Config.Plugins[0].Type, n.Files[0].Config.Plugins[1].Type})
	assert.Equal(t, []facts.CNIDaemonSet{{Namespace: "kube-system", Name: "calico-node", Plugin: "calico"}}, run.CNI.DaemonSets)
	for _, c := range f.exec.Calls() {
		assert.NotEqual(t, "kube-proxy-a1", c.Pod.Name, "the first reader answered")
	}
}

// The real tuning plugin (containernetworking/plugins v1.10.0, run in the lab by
// lab/e2e/vpn_tuning_test.go) writes its sysctl map after the plugins before it: when it has the
// last word, Calico's setting changes nothing, so Calico's fix is not printed; a map that names
// ip_forward in both spellings with two values is written in random order.
func TestTheTuningPluginsWriteIsJudgedAsTheRealPluginMakesIt(t *testing.T) {
	calicoInstall := facts.CalicoSettings{Installation: true}
	cases := []struct {
		name      string
		conf      string
		newPod    string
		writer    string
		calicoFix bool   // Calico's fix is printed
		message   string // in VPN003-ORIGIN-* of a pod reading 0
		unknown   string
	}{
		{"tuning alone writes 0: its map is the fix, no command", `{"name":"lab","cniVersion":"1.0.0","plugins":[{"type":"ptp"},{"type":"tuning","sysctl":{"net.ipv4.ip_forward":"0"}}]}`,
			"0", "tuning", false, `sets net.ipv4.ip_forward to "1" in its sysctl map in node node-vpn's /etc/cni/net.d/05-lab.conflist`, ""},
		{"the slash spelling is the same file", `{"name":"lab","cniVersion":"1.0.0","plugins":[{"type":"ptp"},{"type":"tuning","sysctl":{"net/ipv4/ip_forward":"0"}}]}`,
			"0", "tuning", false, "the tuning plugin writes 0", ""},
		{"tuning's 0 after Calico's 1: Calico's fix would change nothing", `{"name":"k","cniVersion":"1.0.0","plugins":[{"type":"calico","container_settings":{"allow_ip_forwarding":true}},{"type":"tuning","sysctl":{"net.ipv4.ip_forward":"0"}}]}`,
			"0", "tuning", false, "the tuning plugin has the last word", ""},
		{"Calico's 0 after a tuning without ip_forward: Calico's fix", `{"name":"k","cniVersion":"1.0.0","plugins":[{"type":"tuning","sysctl":{"net.core.somaxconn":"1024"}},{"type":"calico"}]}`,
			"0", "calico", true, "the CNI can give every new pod 1 instead", ""},
		{"both spellings, two values: either", `{"name":"lab","cniVersion":"1.0.0","plugins":[{"type":"ptp"},{"type":"tuning","sysctl":{"net.ipv4.ip_forward":"0","net/ipv4/ip_forward":"1"}}]}`,
			"", "tuning", false, "where the 0 comes from could not be told", "writes both, in random order"},
		{"both spellings, one value", `{"name":"lab","cniVersion":"1.0.0","plugins":[{"type":"ptp"},{"type":"tuning","sysctl":{"net.ipv4.ip_forward":"0","net/ipv4/ip_forward":" 0"}}]}`,
			"0", "tuning", false, "the tuning plugin writes 0", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := facts.ParseCNIConfig(tc.conf)
			require.NoError(t, err)
			run := &facts.Run{CNI: facts.CNI{Calico: calicoInstall}}
			p := &facts.Pod{Node: facts.NodeRead{Node: "node-vpn", Forward: "1", Inherit: "0",
				Files: []facts.CNIFile{{Path: "/etc/cni/net.d/05-lab.conflist", Config: conf}}}}
			o := originOf(run, p)
			assert.Equal(t, tc.newPod, o.NewPod)
			assert.Equal(t, tc.writer, o.Writer)
			_, ok := calicoFix(run, p, o)
			assert.Equal(t, tc.calicoFix, ok)
			f := zeroOrigin(run, p, o)
			assert.Contains(t, f.Message, tc.message)
			assert.Equal(t, tc.calicoFix, f.Remediation != "", "a command only when it round-trips: %s", f.Remediation)
			if tc.unknown != "" {
				assert.Contains(t, strings.Join(o.Unknown, "; "), tc.unknown)
			}
		})
	}
}
