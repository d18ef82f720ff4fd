package vpn

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestEveryHopAnswersFromInsideAHealthyPod(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	all := messages(fs)
	assert.Contains(t, all, "hop 1, tunnel peer 10.8.0.2: answered (echo reply)")
	assert.Contains(t, all, "hop 2, pod IP 10.244.1.7 (cluster DNS pod kube-system/coredns-5d78c-q8lzt): answered (NOERROR)")
	assert.Contains(t, all, "hop 3, cluster DNS VIP 10.96.0.10 (Service kube-system/kube-dns): answered (NOERROR)")
	assert.Contains(t, all, "hop 4, names kubernetes.default.svc.cluster.local: answered")
	assert.Contains(t, all, "hop 5, public address : skipped (not asked (--public ADDRESS[:PORT]))")
	assert.Equal(t, "dig +time=2 +tries=1 @10.96.0.10 kubernetes.default.svc.cluster.local A", fs[2].Evidence["method"], "the tool used is said")
}

func TestASilentVIPIsTheFirstSilentHopAndLaterHopsAreNotTried(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{vipSilent: true}, nil)
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	require.Equal(t, engine.StatusFail, st)
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 1)
	assert.Contains(t, fails[0].Message, "cluster DNS VIP 10.96.0.99 (--cluster-dns): silent (no DNS answer within 2 s)")
	assert.Contains(t, fails[0].Message, "the Service layer or policy")
	// The pod's hops are probed at once (each is an exec): what a hop after the first silent one
	// found is not reported, it is "not tried" in the ladder.
	assert.Contains(t, messages(fs), "names kubernetes.default.svc.cluster.local: not tried")
	assert.NotContains(t, messages(fs), "names kubernetes.default.svc.cluster.local: answered")
}

func TestTheResolverFailingInsideThePodIsAWarningAndTheLadderGoesOn(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{namesFail: true}, func(_ *corev1.Pod, o *Options) { o.Public = "10.244.1.7:53" })
	f.exec.On(vpnPodRef, "exec 3<>/dev/tcp/10.244.1.7/53", vpnReply(t, "tcp-open-bash"))
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	all := messages(fs)
	assert.Contains(t, all, "warn Pod vpn/openvpn-7d9f8-x2x4k: hop 4, names kubernetes.default.svc.cluster.local: silent")
	assert.Contains(t, all, "hop 5, public address 10.244.1.7:53: answered", "the public hop is still walked")
}

func TestASilentPodIPPointsAtPolicyOrCNI(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{tools: []string{"cat", "sh", "bash", "timeout", "dig"}}, func(_ *corev1.Pod, o *Options) {
		o.PodTarget = netip.MustParseAddrPort("10.244.1.99:80")
	})
	f.exec.On(vpnPodRef, "exec 3<>/dev/tcp/10.244.1.99/80", vpnReply(t, "tcp-silent-bash"))
	f.exec.On(vpnPodRef, "exec 3<>/dev/tcp/10.8.0.2/1194", vpnReply(t, "tcp-refused-bash"))
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	all := messages(fs)
	assert.Contains(t, all, "tunnel peer 10.8.0.2: answered (connection refused: the host answered)", "no ping in the image: bash's /dev/tcp")
	assert.Contains(t, all, "pod IP 10.244.1.99 (--pod-target): silent (no answer within 2 s)")
	assert.Contains(t, all, "policy or CNI (the VPN pod itself cannot reach another pod)")
}

func TestAnImageWithoutProbingToolsIsUnmeasuredNotSilent(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{tools: []string{"cat", "sh"}}, nil)
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	assert.Equal(t, engine.StatusWarn, st, messages(fs))
	assert.Empty(t, engine.WithSeverity(fs, engine.SeverityFail))
	all := messages(fs)
	assert.Contains(t, all, "unmeasured (the image has none of dig, nslookup, host")
	assert.True(t, strings.Contains(all, "not measured, nothing concluded"))
}
