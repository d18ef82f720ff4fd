package vpn

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestNoMasqueradeForThePoolIsTheReturnPathFailure(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, nil)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	assert.Contains(t, fs[0].Message, "no masquerade for the client pool 10.8.0.2/32")
	assert.Equal(t, []string{"iptables-save", "iptables-legacy-save", "iptables-nft-save", "nft -j"}, fs[0].Evidence["readWith"])
	assert.Contains(t, fs[0].Remediation, "- iptables\n        - -t\n        - nat\n        - -A\n        - POSTROUTING\n        - -s\n        - 10.8.0.2/32\n        - -o\n        - eth0\n        - -j\n        - MASQUERADE")
	assert.Contains(t, fs[0].Remediation, "image: kylemanna/openvpn:2.4")
}

func TestAMasqueradedPoolPassesNamingTheRule(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "-A POSTROUTING -s 10.8.0.0/24 -o eth0 -j MASQUERADE")
}

func TestANatTableThatCannotBeReadIsUnknownNotAFailure(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-denied"}, nil)
	st, reason, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusError, st, messages(fs))
	assert.Contains(t, reason, "Permission denied (you must be root)")
}

func TestAPolicyWrittenForThePoolStopsMatchingOnceMasqueraded(t *testing.T) {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "allow-vpn-clients"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.8.0.0/16"}}}}}}}
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, np)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	w := engine.WithSeverity(fs, engine.SeverityWarn)
	require.Len(t, w, 1)
	assert.Equal(t, "NetworkPolicy web/allow-vpn-clients", w[0].Object)
	assert.Contains(t, w[0].Message, "packets arrive from the VPN pod's address 10.244.1.5")
	assert.Contains(t, w[0].Remediation, `"kubernetes.io/metadata.name":"vpn"`)
	assert.Contains(t, w[0].Remediation, `"app":"openvpn"`)
	assert.NotContains(t, w[0].Remediation, "pod-template-hash")

	// The JSON patch, applied to the policy, makes it admit the masqueraded packets.
	applyFix(t, f, w[0].Remediation)
	again := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, policyFrom(t, f))
	st, _, fs = again.run(t, VPNReturnPath(again.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))
}

func TestIngressRulesOfAnEgressOnlyPolicyAreNotAMismatch(t *testing.T) {
	// policyTypes [Egress]: the ingress rule is never applied (the lab's enforcer let the
	// masqueraded packets through), so it cannot stop matching them either.
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "egress-only"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.8.0.0/16"}}}}}}}
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, np)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))

	np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
	f = newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, np)
	st, _, fs = f.run(t, VPNReturnPath(f.env))
	assert.Equal(t, engine.StatusWarn, st, messages(fs))
}

// policyFrom reads back the fixture's (patched) policy web/allow-vpn-clients or vpn/from-vpn.
func policyFrom(t *testing.T, f *vpnFixture) *networkingv1.NetworkPolicy {
	t.Helper()
	l, err := f.client.NetworkingV1().NetworkPolicies("").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	np := l.Items[0]
	np.ResourceVersion = ""
	return &np
}

func TestAPolicyThatAlsoAdmitsTheVPNPodIsFine(t *testing.T) {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "allow-vpn"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.8.0.0/16"}},
			{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "vpn"}},
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "openvpn"}}},
		}}}}}
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil, np)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))
}

func TestWithoutMasqueradeAPolicyAdmittingOnlyTheVPNPodIsSaid(t *testing.T) {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "from-vpn"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "openvpn"}}}}}}}}
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, nil, np)
	_, _, fs := f.run(t, VPNReturnPath(f.env))
	w := engine.WithSeverity(fs, engine.SeverityWarn)
	require.Len(t, w, 1)
	assert.Contains(t, w[0].Message, "without masquerade client packets keep their 10.8.0.2/32 source")
	assert.Contains(t, w[0].Remediation, `"ipBlock":{"cidr":"10.8.0.2/32"}`)

	applyFix(t, f, w[0].Remediation)
	again := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, nil, policyFrom(t, f))
	_, _, fs = again.run(t, VPNReturnPath(again.env))
	assert.Empty(t, engine.WithSeverity(fs, engine.SeverityWarn), messages(fs))
}

func TestAPoolTheClusterRoutesBackIsNotAFailure(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, func(_ *corev1.Pod, o *Options) {
		o.FromClient, o.HopTimeout = true, 300*time.Millisecond
	})
	f.env.Prober = &fakeProber{
		local:   []netip.Addr{netip.MustParseAddr("10.8.0.2")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): nil},
		query:   map[netip.AddrPort]string{netip.MustParseAddrPort("10.244.1.7:53"): "NOERROR"},
	}
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "the cluster routes the pool back")
}

// A masquerade limited to `-o tun0` (recorded from a namespace holding that one rule) matches
// none of the pool's packets to the ladder's pod and VIP, which leave through eth0: the pool
// keeps its source there, as without any rule.
func TestAMasqueradeScopedToTheTunnelIsNoMasqueradeForTheLadder(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq-tun0"}, nil)
	st, _, fs := f.run(t, VPNReturnPath(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	fail := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fail, 1, messages(fs))
	assert.Equal(t, "VPN005-MASQUERADE-SCOPE", fail[0].Code)
	assert.Contains(t, fail[0].Message, "-A POSTROUTING -s 10.8.0.0/24 -o tun0 -j MASQUERADE")
	assert.Contains(t, fail[0].Message, "10.244.1.7")
	assert.Contains(t, fail[0].Message, "10.96.0.10")
	assert.Contains(t, fail[0].Message, "leave through eth0")
	assert.Contains(t, fail[0].Remediation, "- -o\n        - eth0\n        - -j\n        - MASQUERADE", "the fix masquerades out of the uplink")
}
