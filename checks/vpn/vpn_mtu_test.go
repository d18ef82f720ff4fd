package vpn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// mtu-blackhole and mtu-ok are sweeps recorded over a real OpenVPN 2.6 static-key tunnel
// between two namespaces through two routers (facts/record_test.go): in mtu-blackhole the
// link between the routers has MTU 1400 and the routers drop the ICMP "fragmentation needed"
// they would send. The pod side pinged the peer with Don't Fragment; the client side asked
// the lab's CoreDNS behind the tunnel questions padded to each size.

func TestATunnelMTUBlackHoleIsFoundFromInsideThePodAndNamesTheLargestSize(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, enableForwardInit(true))
	sweepRecordings(t, f, "mtu-blackhole")
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	bh := byCode(t, fs, "VPN006-MTU-BLACK-HOLE")
	assert.Contains(t, bh.Message, "hop 1, tunnel peer 10.8.0.2: small packets pass but Don't-Fragment packets of 1304 bytes vanish without an ICMP error: a tunnel MTU black hole, the largest size that passes is 1296 bytes")
	assert.Contains(t, bh.Message, "([1440 1500] pass again: the sender fragments an encapsulated packet that outgrows its own link")
	assert.LessOrEqual(t, len(f.exec.Calls()), 40, "the sweep is bounded")

	_, v := verdictOf(t, f)
	assert.Equal(t, "MTU", v.Evidence["layer"], v.Message)
	assert.Contains(t, v.Message, "A tunnel MTU black hole: from inside Pod vpn/openvpn-7d9f8-x2x4k, tunnel peer 10.8.0.2 answers small packets, but Don't-Fragment packets of 1304 bytes vanish")
	assert.Contains(t, v.Remediation, "tun-mtu 1296")
	assert.Contains(t, v.Remediation, "this cannot be proven from here")
}

func TestAHealthyTunnelPassesEverySizeAndSaysSo(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, enableForwardInit(true))
	sweepRecordings(t, f, "mtu-ok")
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "hop 1, tunnel peer 10.8.0.2: answered (echo reply); Don't-Fragment packets up to 1500 bytes pass")
	_, v := verdictOf(t, f)
	assert.Equal(t, "none", v.Evidence["layer"], v.Message)
}

func TestAnImageWithoutAnInterfaceMTULeavesTheSweepUnmeasured(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	_, _, fs := f.run(t, VPNPodLadder(f.env))
	assert.Contains(t, fs[0].Evidence["mtu"], "not measured: the MTU of tun0 was not readable")
	assert.NotContains(t, messages(fs), "black hole")
}

func TestATunnelMTUBlackHoleIsFoundFromTheClient(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, func(p *corev1.Pod, o *Options) {
		enableForwardInit(true)(p, o)
		fromClient(o)
	})
	mtu, df := clientSweep(t, "mtu-blackhole")
	p := everyHopAnswers("10.8.0.2")
	p.mtu, p.df = mtu, df
	f.env.Prober = p
	_, _, fs := f.run(t, VPNClientLadder(f.env))
	bh := engineWithCode(fs, "VPN007-MTU-BLACK-HOLE")
	require.Len(t, bh, 2, "the pod and the VIP: %s", messages(fs))
	assert.Contains(t, bh[0].Message, "hop 2, pod IP 10.244.1.7 (cluster DNS pod kube-system/coredns-5d78c-q8lzt): small packets pass but Don't-Fragment packets of 1304 bytes vanish")
	_, v := verdictOf(t, f)
	assert.Equal(t, "MTU", v.Evidence["layer"], v.Message)
	assert.Contains(t, v.Message, "from this machine through the tunnel, pod IP 10.244.1.7")
}

func engineWithCode(fs []engine.Finding, code string) []engine.Finding {
	var out []engine.Finding
	for _, f := range fs {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}
