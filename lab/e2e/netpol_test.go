//go:build lab

package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NetworkPolicies meet a real enforcer: kube-network-policies runs in every node namespace
// (lab/internal/netpol) and judges the first packet of each connection of the nodes' pods, DNS
// packets each. VPN005 reads the policies' text; these tests hold what it says to what the
// enforcer does to the ladder's packets (VPN007 from the laptop, through the tunnel): the pod
// hop is the cluster DNS pod, asked a DNS question over UDP.

// podHopRe is VPN007's pod hop line: its address and its state.
var podHopRe = regexp.MustCompile(`hop 2, pod IP ([0-9.]+) [^\n]*: (answered|silent)`)

// podHop is the pod hop's address and state ("answered" or "silent") in a vpn-trace run.
func podHop(t *testing.T, r lanaccessRun) (ip, state string) {
	t.Helper()
	hops := hopLines(t, r, "VPN007")
	m := podHopRe.FindStringSubmatch(hops)
	require.NotNil(t, m, "no pod hop in VPN007:\n%s", hops)
	return m[1], m[2]
}

// checkCodes are the finding codes of a check in a run.
func checkCodes(t *testing.T, r lanaccessRun, id string) []string {
	t.Helper()
	_, _, fs := r.check(t, id)
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

// dnsFromVPNPod reports whether a DNS question from the VPN pod's own namespace to ip is
// answered: the packets cross node-vpn as the clients' masqueraded ones do.
func dnsFromVPNPod(t *testing.T, ip string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := lab.Exec(ctx, lab.PodNetNS(lab.VPNPod(t).UID), "dig", "+tries=1", "+time=1", "@"+ip, "kubernetes.default.svc.cluster.local", "+short")
	return err == nil && strings.TrimSpace(out) != ""
}

// waitPolicy waits until the enforcers have a policy change: the VPN pod's question to the DNS
// pod is answered (or not). When the change flips that outcome (flips), the flip is the sign
// and nothing else is waited for; when answered is what the change does not alter, it waits for
// the informers (a change reaches them within a second on the lab's API) and checks once.
func waitPolicy(t *testing.T, dnsIP string, answered, flips bool) {
	t.Helper()
	if !flips {
		time.Sleep(2 * time.Second)
	}
	eventually(t, 20*time.Second, func() error {
		if dnsFromVPNPod(t, dnsIP) != answered {
			return errPolicyNotInForce
		}
		return nil
	})
}

type policyErr string

func (e policyErr) Error() string { return string(e) }

const errPolicyNotInForce = policyErr("the enforcers do not act on the policy change yet")

// drops is the enforcers' drop count, summed over the nodes.
func drops(t *testing.T) float64 {
	t.Helper()
	sum := 0.0
	for _, n := range lab.Nodes {
		sum += lab.EnforcerVerdicts(t, n.Name)["drop"]
	}
	return sum
}

func policy(namespace, name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

var (
	openvpnPods = metav1.LabelSelector{MatchLabels: map[string]string{"app": "openvpn"}}
	dnsPods     = metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}
)

// traceFromLaptop runs vpn-trace through the tunnel; the tunnel is up and forwarding on.
func traceFromLaptop(t *testing.T) lanaccessRun {
	t.Helper()
	return runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
}

// traceUnderPolicy creates np, waits until it silences the VPN pod's question to the DNS pod,
// and runs vpn-trace: the pod hop is silent and the enforcers dropped packets meanwhile.
func traceUnderPolicy(t *testing.T, np *networkingv1.NetworkPolicy, dnsIP string) lanaccessRun {
	t.Helper()
	lab.CreateNetworkPolicy(t, np)
	waitPolicy(t, dnsIP, false, true)
	before := drops(t)
	r := traceFromLaptop(t)
	_, state := podHop(t, r)
	assert.Equal(t, "silent", state, hopLines(t, r, "VPN007"))
	assert.Greater(t, drops(t), before, "the enforcer dropped the ladder's packets")
	_, v := verdict(t, r)
	assert.Equal(t, "policy", v.Evidence["layer"], v.Message)
	return r
}

// traceAfterFix pastes VPN005's printed fix as it is; the real enforcer then admits the hop,
// and VPN005 no longer says code.
func traceAfterFix(t *testing.T, fix, dnsIP, code string) {
	t.Helper()
	lab.ApplyRemedy(t, fix)
	waitPolicy(t, dnsIP, true, true)
	r := traceFromLaptop(t)
	_, state := podHop(t, r)
	assert.Equal(t, "answered", state, hopLines(t, r, "VPN007"))
	assert.NotContains(t, checkCodes(t, r, "VPN005"), code)
}

func TestEnforcerDropsWhatVPN005CallsEgressDeniedAndThePrintedFixOpensTheHop(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	dnsIP := runningPods(t, "kube-system", "k8s-app=kube-dns")[0].Status.PodIP

	r := traceFromLaptop(t)
	ip, state := podHop(t, r)
	require.Equal(t, dnsIP, ip, "the ladder's pod hop is the cluster DNS pod")
	require.Equal(t, "answered", state, hopLines(t, r, "VPN007"))
	assert.NotContains(t, checkCodes(t, r, "VPN005"), "VPN005-EGRESS-DENIED")

	// Deny every egress of the VPN pod: the clients' packets it forwards leave under it.
	r = traceUnderPolicy(t, policy("vpn", "vpn-deny-egress", networkingv1.NetworkPolicySpec{PodSelector: openvpnPods,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}), dnsIP)
	denied := findingByCode(t, r, "VPN005", "VPN005-EGRESS-DENIED")
	assert.Equal(t, "NetworkPolicy vpn/vpn-deny-egress", denied.Object)
	traceAfterFix(t, denied.Remediation, dnsIP, "VPN005-EGRESS-DENIED")
}

func TestEnforcerDropsMasqueradedClientsAPoolOnlyIngressRuleMissesAndVPN005sFixAdmitsThem(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	dnsIP := runningPods(t, "kube-system", "k8s-app=kube-dns")[0].Status.PodIP

	// An ingress rule for the client pool on the DNS pods: the VPN pod masquerades the pool,
	// so the packets arrive from its own address.
	r := traceUnderPolicy(t, policy("kube-system", "dns-from-vpn-clients", networkingv1.NetworkPolicySpec{PodSelector: dnsPods,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: lab.VPNPool()}}}}}}), dnsIP)
	mismatch := findingByCode(t, r, "VPN005", "VPN005-POLICY-MISMATCH")
	assert.Equal(t, "NetworkPolicy kube-system/dns-from-vpn-clients", mismatch.Object)
	assert.Contains(t, mismatch.Message, "packets arrive from the VPN pod's address")
	traceAfterFix(t, mismatch.Remediation, dnsIP, "VPN005-POLICY-MISMATCH")
}

// TestEnforcerAndVPN005ReadPoliciesAlike holds VPN005's reading of a policy's text to the
// enforcer's, case by case: whether the pod hop answers, and whether VPN005 says it is denied.
func TestEnforcerAndVPN005ReadPoliciesAlike(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	dnsIP := runningPods(t, "kube-system", "k8s-app=kube-dns")[0].Status.PodIP
	udp := corev1.ProtocolUDP
	named := intstr.FromString("dns")
	egressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	cases := []struct {
		name     string
		np       *networkingv1.NetworkPolicy
		answered bool
		code     string // VPN005's finding for it ("" = none)
	}{
		{"ingress only on the VPN pod", policy("vpn", "ingress-only", networkingv1.NetworkPolicySpec{PodSelector: openvpnPods,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}), true, ""},
		{"egress ipBlock whose except holds the DNS pod", policy("vpn", "except-dns", networkingv1.NetworkPolicySpec{PodSelector: openvpnPods,
			PolicyTypes: egressOnly, Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "10.244.0.0/16", Except: []string{dnsIP + "/32"}}}}}}}), false, "VPN005-EGRESS-DENIED"},
		{"egress to the named port dns", policy("vpn", "named-port", networkingv1.NetworkPolicySpec{PodSelector: openvpnPods,
			PolicyTypes: egressOnly, Egress: []networkingv1.NetworkPolicyEgressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &named}}}}}), true, ""},
		// policyTypes left out: the API server makes it [Ingress, Egress] since there are
		// egress rules, and the only one admits the internet range.
		{"policyTypes defaulted from its egress rules", policy("vpn", "defaulted-types", networkingv1.NetworkPolicySpec{PodSelector: openvpnPods,
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "198.51.100.0/24"}}}}}}), false, "VPN005-EGRESS-DENIED"},
		{"egress denied in another namespace", policy("web", "deny-egress", networkingv1.NetworkPolicySpec{
			PolicyTypes: egressOnly}), true, ""},
		// An egress-only policy on the DNS pods whose ingress rule names the pool alone: never
		// applied, so the masqueraded packets pass (VPN005 used to call it a mismatch).
		{"ingress rule of an egress-only policy on the DNS pods", policy("kube-system", "egress-only-dns", networkingv1.NetworkPolicySpec{PodSelector: dnsPods,
			PolicyTypes: egressOnly, Egress: []networkingv1.NetworkPolicyEgressRule{{}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: lab.VPNPool()}}}}}}), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lab.CreateNetworkPolicy(t, c.np)
			waitPolicy(t, dnsIP, c.answered, !c.answered)
			r := traceFromLaptop(t)
			_, state := podHop(t, r)
			want := map[bool]string{true: "answered", false: "silent"}[c.answered]
			assert.Equal(t, want, state, "the enforcer: %s", hopLines(t, r, "VPN007"))
			got := checkCodes(t, r, "VPN005")
			for _, code := range []string{"VPN005-EGRESS-DENIED", "VPN005-POLICY-MISMATCH"} {
				if code == c.code {
					assert.Contains(t, got, code)
				} else {
					assert.NotContains(t, got, code)
				}
			}
			lab.DeleteNetworkPolicy(t, c.np.Namespace, c.np.Name)
			waitPolicy(t, dnsIP, true, !c.answered)
		})
	}
}

// TestEnforcerJudgesTheVPNPodsEgressByItsAddressOnly: without masquerade the clients' packets
// leave the VPN pod with their pool addresses, and kube-network-policies finds the source pod
// by the packet's source address (evaluatePacket, getPodAssignedToIP): no pod, no egress
// policy, so it lets them through although a policy denies the VPN pod every egress. VPN005
// keeps saying EGRESS-DENIED: the API applies an egress policy to what the selected pod sends,
// and enforcers that judge by the pod's interface do not let a pod send from addresses that
// are not its own (Calico's workload source check, unless allowedSourcePrefixes says
// otherwise). This enforcer's pass is its own behaviour, not a rule for doctor.
func TestEnforcerJudgesTheVPNPodsEgressByItsAddressOnly(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	lab.DropMasquerade(t)
	dnsIP := runningPods(t, "kube-system", "k8s-app=kube-dns")[0].Status.PodIP
	lab.CreateNetworkPolicy(t, policy("vpn", "vpn-deny-egress", networkingv1.NetworkPolicySpec{PodSelector: openvpnPods,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}))
	waitPolicy(t, dnsIP, false, true) // the pod's own packets carry its address: dropped
	r := traceFromLaptop(t)
	_, state := podHop(t, r)
	assert.Equal(t, "answered", state, "the clients' unmasqueraded packets pass this enforcer: %s", hopLines(t, r, "VPN007"))
	assert.Contains(t, checkCodes(t, r, "VPN005"), "VPN005-EGRESS-DENIED")
}
