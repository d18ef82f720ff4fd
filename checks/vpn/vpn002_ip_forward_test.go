package vpn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestForwardingOffFailsWithTheValueAndHowItWasRead(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	st, _, fs := f.run(t, VPNForwarding(f.env))
	require.Equal(t, engine.StatusFail, st)
	require.Len(t, fs, 1)
	assert.Contains(t, fs[0].Message, "net.ipv4.ip_forward = 0")
	assert.Equal(t, "cat /proc/sys/net/ipv4/ip_forward", fs[0].Evidence["readWith"])
	assert.Contains(t, fs[0].Remediation, "kubectl -n vpn exec openvpn-7d9f8-x2x4k -c openvpn -- sysctl -w net.ipv4.ip_forward=1")
}

func TestForwardingOnPasses(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, nil)
	st, _, fs := f.run(t, VPNForwarding(f.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))
}

func TestAnImageWithoutCatIsReadWithSysctl(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	f.exec.On(vpnPodRef, "cat /proc/sys/net/ipv4/ip_forward", kubetest.Missing("cat")).
		On(vpnPodRef, "sysctl -n net.ipv4.ip_forward", vpnReply(t, "ip-forward-sysctl-0"))
	st, _, fs := f.run(t, VPNForwarding(f.env))
	require.Equal(t, engine.StatusFail, st)
	assert.Equal(t, "sysctl -n net.ipv4.ip_forward", fs[0].Evidence["readWith"])
}

func TestAnImageWithNeitherToolIsAnErrorThatSaysSoNeverAGuess(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	f.exec.On(vpnPodRef, "cat /proc/sys/net/ipv4/ip_forward", kubetest.Missing("cat")).
		On(vpnPodRef, "sysctl -n net.ipv4.ip_forward", kubetest.Missing("sysctl"))
	st, reason, fs := f.run(t, VPNForwarding(f.env))
	assert.Equal(t, engine.StatusError, st)
	assert.Contains(t, reason, "the image of container openvpn has no cat, no sysctl")
	require.Len(t, fs, 1)
	assert.Contains(t, fs[0].Remediation, "kubectl -n vpn debug openvpn-7d9f8-x2x4k -it --image=busybox:1.36.1 --target=openvpn -- cat /proc/sys/net/ipv4/ip_forward")
}

func TestAnImageWithoutAShellSaysSo(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	f.exec.On(vpnPodRef, "cat /proc/sys/net/ipv4/ip_forward", kubetest.Missing("sh"))
	st, reason, _ := f.run(t, VPNForwarding(f.env))
	assert.Equal(t, engine.StatusError, st)
	assert.Contains(t, reason, `has no sh`)
	for _, c := range f.exec.Calls() {
		assert.NotEqual(t, "sysctl", c.Command[0], "without a shell nothing else is tried")
	}
}
