package vpn

import (
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func fromClient(o *Options) { o.FromClient, o.HopTimeout = true, 300*time.Millisecond }

func TestTheClientLadderIsOnlyWalkedWhenAsked(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	st, reason, _ := f.run(t, VPNClientLadder(f.env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, reason, "--from-client")
}

func TestAMachineWithoutAnAddressInThePoolIsNotConnected(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{tunnel: "tunnel-server"}, func(_ *corev1.Pod, o *Options) { fromClient(o) })
	f.exec.On(vpnPodRef, "cat /etc/openvpn/openvpn.conf", vpnConfigReply(t))
	f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("192.168.1.20")}}
	st, reason, _ := f.run(t, VPNClientLadder(f.env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, reason, "no address in the client pool 10.8.0.0/24: connect the VPN")
}

// With forwarding off the seed's symptom shows: the server's tunnel address answers, nothing
// beyond it does.
func TestThePeerAnsweringAndThePodSilentNamesForwardingOrTheReturnPath(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, func(_ *corev1.Pod, o *Options) { fromClient(o) })
	f.env.Prober = &fakeProber{
		local:   []netip.Addr{netip.MustParseAddr("10.8.0.2")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
	}
	st, _, fs := f.run(t, VPNClientLadder(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	all := messages(fs)
	assert.Contains(t, all, "info this machine (10.8.0.2): hop 1, tunnel peer 10.8.0.1: answered (connection refused: the host answered)")
	assert.Contains(t, all, "fail this machine (10.8.0.2): hop 2, pod IP 10.244.1.7 (cluster DNS pod kube-system/coredns-5d78c-q8lzt): silent")
	assert.Contains(t, all, "forwarding or the return path")
	assert.Contains(t, all, "hop 3, cluster DNS VIP 10.96.0.10 (Service kube-system/kube-dns): not tried")
	assert.Equal(t, "TCP connect to 10.8.0.1:1194 (a refusal proves the round trip too)", fs[0].Evidence["method"])
}

func TestNamesFailingThroughTheTunnelWhileTheVIPAnswersIsDNSPlumbing(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, func(_ *corev1.Pod, o *Options) { fromClient(o) })
	f.env.Prober = &fakeProber{
		local:   []netip.Addr{netip.MustParseAddr("10.8.0.2")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
		query: map[netip.AddrPort]string{netip.MustParseAddrPort("10.244.1.7:53"): "NOERROR",
			netip.MustParseAddrPort("10.96.0.10:53"): "NOERROR"},
	}
	st, _, fs := f.run(t, VPNClientLadder(f.env))
	require.Equal(t, engine.StatusFail, st)
	fails := engine.WithSeverity(fs, engine.SeverityFail)
	require.Len(t, fails, 1)
	assert.Contains(t, fails[0].Message, "names kubernetes.default.svc.cluster.local: silent")
	assert.Contains(t, fails[0].Message, "DNS plumbing, not forwarding")
}
