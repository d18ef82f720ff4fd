package vpn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// nat-nft-masq and nat-nft-only are the nat script run in a namespace whose masquerade was
// written with nft directly (iptables-save then reports incompatible base chains), the second
// with a PATH holding only sh and nft (facts/record_test.go).

func TestMasqueradeWrittenWithNftIsRead(t *testing.T) {
	for _, rec := range []string{"nat-nft-masq", "nat-nft-only"} {
		t.Run(rec, func(t *testing.T) {
			f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: rec}, nil)
			st, _, fs := f.run(t, VPNReturnPath(f.env))
			require.Equal(t, engine.StatusPass, st, messages(fs))
			m := byCode(t, fs, "VPN005-MASQUERADED")
			assert.Contains(t, m.Message, `ip saddr 10.8.0.0/24 oifname "eth0" masquerade`)
			assert.Contains(t, m.Evidence["readWith"], "nft -j")
		})
	}
}

func TestAPoolTheNodesRouteBackByBGPNeedsNoMasquerade(t *testing.T) {
	extra, register := onNode2(t, "node-pool-bgp")
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty", node: "node-pool-to-pod"}, enableForwardInit(true), extra...)
	register(f)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	r := byCode(t, fs, "VPN005-ROUTED-BACK")
	assert.Contains(t, r.Message, "node node-2 routes 10.8.0.0/24 via 10.0.10.11 dev eth0 (10.8.0.0/24 via 10.0.10.11 dev eth0 proto bird), advertised by BGP")
	assert.Contains(t, r.Message, "node node-1 routes 10.8.0.0/24 via 10.244.1.5 dev eth0")
	_, v := verdictOf(t, f)
	assert.NotEqual(t, "return path", v.Evidence["layer"], v.Message)
}

func TestARouteBackThatStopsAtTheVPNNodeIsNoRouteBack(t *testing.T) {
	extra, register := onNode2(t, "node-pool-bgp")
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, enableForwardInit(true), extra...)
	register(f)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	n := byCode(t, fs, "VPN005-NO-MASQUERADE")
	assert.Contains(t, n.Message, "node node-1 (the VPN pod's) has no route to 10.8.0.2/32 but its default route via 10.0.10.1: what node node-2 sends there goes nowhere")
}

// poolNotRoutedBack runs VPN005 with node-2 (the ladder's pod's) read from a recorded node
// that has no route to the pool, and returns its NO-MASQUERADE finding.
func poolNotRoutedBack(t *testing.T, node2 string) (*vpnFixture, engine.Finding) {
	t.Helper()
	extra, register := onNode2(t, node2)
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty", node: "node-pool-to-pod"}, enableForwardInit(true), extra...)
	register(f)
	_, _, fs := f.run(t, VPNReturnPath(f.env))
	return f, byCode(t, fs, "VPN005-NO-MASQUERADE")
}

func TestNodesWithOnlyADefaultRouteDoNotRouteThePoolBack(t *testing.T) {
	f, n := poolNotRoutedBack(t, "node-pool-default-only")
	assert.Contains(t, n.Message, "node node-2 (the ladder's pod's) has no route to 10.8.0.2/32 but its default route via 10.0.10.1")
	_, v := verdictOf(t, f)
	assert.Equal(t, "return path", v.Evidence["layer"])
}

// The lab's nodes have no default route: a node without a route to the pool drops the replies
// there, it does not send them out of the cluster.
func TestANodeWithoutADefaultRouteDropsTheRepliesToThePool(t *testing.T) {
	_, n := poolNotRoutedBack(t, "node-pool-no-route")
	assert.Contains(t, n.Message, "node node-2 (the ladder's pod's) has neither a route to 10.8.0.2/32 nor a default route: its replies to the pool are dropped there")
	assert.NotContains(t, n.Message, "default route via")
}

func TestWhetherThePoolIsRoutedBackUnreadIsSaid(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, nil)
	_, _, fs := f.run(t, VPNReturnPath(f.env))
	n := byCode(t, fs, "VPN005-NO-MASQUERADE")
	assert.Contains(t, n.Message, "whether the cluster routes the pool back, as a BGP-advertised pool is, could not be read: the node of the ladder's pod is unknown")
}

// egressOnly443 isolates the VPN pod's egress and admits HTTPS to 10.0.0.0/8 only.
func egressOnly443() *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	port := intOrString(443)
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-egress"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "openvpn"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}}}}
}

func TestAnEgressPolicyOnTheVPNPodThatAdmitsNoPodIsSaidAndItsFixRoundTrips(t *testing.T) {
	extra, register := onNode2(t, "node-pool-default-only")
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, append(extra, egressOnly443())...)
	register(f)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	d := byCode(t, fs, "VPN005-EGRESS-DENIED")
	assert.Contains(t, d.Message, "NetworkPolicy vpn/openvpn-egress select the VPN pod for egress and admit nothing to 10.244.1.7:53/UDP (cluster DNS pod kube-system/coredns-5d78c-q8lzt)")
	assert.Contains(t, d.Remediation, `kubectl -n vpn patch networkpolicy openvpn-egress --type=json -p '[{"op":"add","path":"/spec/egress/-","value":{"to":[{"namespaceSelector":{}}]}}]'`)

	applyFix(t, f, d.Remediation)
	np, err := f.client.NetworkingV1().NetworkPolicies("vpn").Get(t.Context(), "openvpn-egress", metav1.GetOptions{})
	require.NoError(t, err)
	np.ResourceVersion = ""
	extra, register = onNode2(t, "node-pool-default-only")
	g := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, append(extra, np)...)
	register(g)
	st, _, fs = g.run(t, VPNReturnPath(g.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))
}

func TestAnEgressPolicyAdmittingTheDNSPortIsFine(t *testing.T) {
	np := egressOnly443()
	udp := corev1.ProtocolUDP
	dns := intOrString("dns")
	np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}},
	})
	extra, register := onNode2(t, "node-pool-default-only")
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, append(extra, np)...)
	register(f)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))
}

// calicoPolicy is a Calico (crd.projectcalico.org/v1) policy as `kubectl get -o yaml` shows it.
func calicoPolicy(kind, namespace, name, selector string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"selector": selector, "types": []any{"Egress"}, "egress": []any{map[string]any{"action": "Deny"}}},
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u
}

func TestCalicoPoliciesSelectingThePodsAreNamedAndUnreadKindsSaid(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil,
		calicoPolicy("GlobalNetworkPolicy", "", "default-deny", "all()"),
		calicoPolicy("NetworkPolicy", "vpn", "vpn-egress", "app == 'openvpn' && has(pod-template-hash)"),
		calicoPolicy("NetworkPolicy", "vpn", "other", "app == 'web'"),
		calicoPolicy("NetworkPolicy", "web", "elsewhere", "all()"),
		calicoPolicy("NetworkPolicy", "vpn", "complex", "app == 'openvpn' || tier == 'edge'"))
	f.dynamic.PrependReactor("list", "globalnetworkpolicies", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group == "projectcalico.org" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "projectcalico.org", Resource: "globalnetworkpolicies"}, "", nil)
		}
		return false, nil, nil
	})
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	c := byCode(t, fs, "VPN005-CNI-POLICIES")
	assert.Contains(t, c.Message, "Calico GlobalNetworkPolicy (crd.projectcalico.org/v1) default-deny (selects the VPN pod)")
	assert.Contains(t, c.Message, "Calico NetworkPolicy (crd.projectcalico.org/v1) vpn/vpn-egress (selects the VPN pod)")
	assert.Contains(t, c.Message, "vpn/complex (selects maybe the VPN pod)")
	assert.NotContains(t, c.Message, "vpn/other")
	assert.NotContains(t, c.Message, "web/elsewhere")
	u := byCode(t, fs, "VPN005-POLICIES-UNREAD")
	assert.Contains(t, u.Message, "Calico GlobalNetworkPolicy (projectcalico.org/v3): ")
	assert.Contains(t, u.Message, "forbidden")
	assert.NotContains(t, u.Message, "Cilium", "a kind the API does not serve is not installed, not unread")
}

func TestCiliumEndpointSelectorsAreEvaluatedWithTheirPrefixes(t *testing.T) {
	cnp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
		"metadata": map[string]any{"name": "vpn-lockdown", "namespace": "vpn"},
		"spec":     map[string]any{"endpointSelector": map[string]any{"matchLabels": map[string]any{"k8s:app": "openvpn", "k8s:io.kubernetes.pod.namespace": "vpn"}}},
	}}
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
		"metadata": map[string]any{"name": "hosts"},
		"spec":     map[string]any{"endpointSelector": map[string]any{"matchLabels": map[string]any{"reserved:host": ""}}},
	}}
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq", policyGroup: "cilium.io"}, nil, cnp, other)
	_, _, fs := f.run(t, VPNReturnPath(f.env))
	c := byCode(t, fs, "VPN005-CNI-POLICIES")
	assert.Contains(t, c.Message, "CiliumNetworkPolicy (cilium.io/v2) vpn/vpn-lockdown (selects the VPN pod)")
	assert.Contains(t, c.Message, "CiliumClusterwideNetworkPolicy (cilium.io/v2) hosts (selects maybe the VPN pod)")
}

func TestTheCalicoSelectorSubsetIsEvaluatedAndTheRestIsUnknown(t *testing.T) {
	l := map[string]string{"app": "openvpn", "tier": "edge"}
	for sel, want := range map[string][2]bool{ // selects, known
		"":                                      {true, true},
		"all()":                                 {true, true},
		"app == 'openvpn'":                      {true, true},
		`app == "web"`:                          {false, true},
		"app != 'web' && has(tier)":             {true, true},
		"!has(tier)":                            {false, true},
		"tier in {'edge', 'core'}":              {true, true},
		"app in {'web'}":                        {false, true},
		"app == 'openvpn' || tier == 'x'":       {false, false},
		"(app == 'openvpn')":                    {false, false},
		"app contains 'vpn'":                    {false, false},
		"has(app) && projectcalico.org/x == ''": {false, true},
	} {
		s, k := calicoSelects(sel, l)
		assert.Equal(t, want, [2]bool{s, k}, sel)
	}
}
