//go:build lab

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The second seed: a VPN client reaches the VPN pod's tunnel address and nothing beyond until
// forwarding is on inside the pod's network namespace.

func webPodIP(t *testing.T) string {
	t.Helper()
	return runningPods(t, "web", "app=web")[0].Status.PodIP
}

func openvpnPod(t *testing.T) string {
	t.Helper()
	return runningPods(t, "vpn", "app=openvpn")[0].Name
}

// laptopReachesWeb reports whether the laptop gets the web pod's answer through the tunnel.
func laptopReachesWeb(t *testing.T, webIP string) bool {
	t.Helper()
	out, err := httpFrom(lab.Laptop(), "http://"+webIP+":5678/", 2*time.Second)
	return err == nil && strings.Contains(out, "hello from the web pod")
}

// waitTunnel waits for the laptop's client to (re)connect after the server pod changed.
func waitTunnel(t *testing.T) {
	t.Helper()
	eventually(t, 40*time.Second, func() error {
		if !lab.Ping(lab.Laptop(), lab.VPNServerTunnelIP(), time.Second) {
			return errTunnelDown
		}
		return nil
	})
}

type tunnelErr string

func (e tunnelErr) Error() string { return string(e) }

const errTunnelDown = tunnelErr("laptop does not reach the VPN server's tunnel address")

func TestVPNSymptomPeerAnswersAndNothingBeyondWithForwardingOff(t *testing.T) {
	require.False(t, lab.VPNPodIPForward(t), "the base manifest has no fix: Calico's plugin wrote 0 into the new pod's namespace")
	waitTunnel(t)
	web := webPodIP(t)
	assert.True(t, lab.Ping(lab.Laptop(), lab.VPNServerTunnelIP(), 2*time.Second), "the peer answers")
	assert.False(t, lab.Ping(lab.Laptop(), web, 2*time.Second), "the web pod is silent")
	assert.False(t, laptopReachesWeb(t, web), "no HTTP beyond the tunnel either")
	_, err := lab.Exec(context.Background(), lab.Laptop(), "dig", "+time=2", "+tries=1", "@"+lab.ClusterDNSIP(), "kubernetes.default.svc.cluster.local")
	assert.Error(t, err, "the cluster DNS VIP is silent through the tunnel")
}

func TestVPNReadingTheSysctlInsideThePodShowsZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := lab.Kubectl(ctx, "exec", "-n", "vpn", openvpnPod(t), "-c", "openvpn", "--", "cat", "/proc/sys/net/ipv4/ip_forward")
	require.NoError(t, err, out)
	assert.Equal(t, "0", strings.TrimSpace(out))
}

func TestVPNHandFixWorksUntilThePodIsReplaced(t *testing.T) {
	waitTunnel(t)
	web := webPodIP(t)
	lab.SetVPNPodIPForward(t, true)
	eventually(t, 10*time.Second, func() error {
		if !laptopReachesWeb(t, web) {
			return tunnelErr("web pod not reachable with ip_forward=1")
		}
		return nil
	})
	assert.True(t, lab.Ping(lab.Laptop(), web, 2*time.Second))
	out := lab.MustExec(t, lab.Laptop(), "dig", "+short", "+time=2", "+tries=1", "@"+lab.ClusterDNSIP(), "kubernetes.default.svc.cluster.local")
	assert.Equal(t, "10.96.0.1", strings.TrimSpace(out), "the cluster DNS VIP answers through the tunnel")

	lab.RestartPods(t, "vpn", "app=openvpn", "openvpn")
	assert.False(t, lab.VPNPodIPForward(t), "the replacement pod starts with forwarding off again")
	waitTunnel(t)
	assert.False(t, laptopReachesWeb(t, web), "the hand fix is gone")
}

func TestVPNFixInTheManifestSurvivesAPodRestart(t *testing.T) {
	for _, variant := range []string{"openvpn-fixed-initcontainer", "openvpn-fixed-sysctls"} {
		t.Run(variant, func(t *testing.T) {
			lab.ApplyVariant(t, variant, "60-openvpn", "vpn", "openvpn")
			assert.True(t, lab.VPNPodIPForward(t))
			waitTunnel(t)
			web := webPodIP(t)
			eventually(t, 10*time.Second, func() error {
				if !laptopReachesWeb(t, web) {
					return tunnelErr("web pod not reachable with the fixed manifest")
				}
				return nil
			})
			lab.RestartPods(t, "vpn", "app=openvpn", "openvpn")
			assert.True(t, lab.VPNPodIPForward(t), "the fix is in the spec: the new pod has it too")
			waitTunnel(t)
			eventually(t, 10*time.Second, func() error {
				if !laptopReachesWeb(t, web) {
					return tunnelErr("web pod not reachable after the restart")
				}
				return nil
			})
		})
	}
}

func TestVPNReturnPathNeedsMasqueradeOrARoute(t *testing.T) {
	waitTunnel(t)
	web := webPodIP(t)
	lab.SetVPNPodIPForward(t, true)
	eventually(t, 10*time.Second, func() error {
		if !laptopReachesWeb(t, web) {
			return tunnelErr("web pod not reachable with forwarding on")
		}
		return nil
	})
	lab.DropMasquerade(t)
	assert.True(t, laptopReachesWeb(t, web), "the return route alone brings replies back")
	lab.DropReturnRoute(t)
	assert.False(t, laptopReachesWeb(t, web), "no masquerade and no route back: replies are lost")
}

// node-vpn routes the pool on to the VPN pod "via <pod IP>"; the real ptp plugin routes the pod
// IP with scope host, and the kernel uses a gateway only through a link-scope route: without
// onlink the replies to the pool are lost on node-vpn, and VPN005 must say so (before, it called
// the pool routed back).
func TestVPNTraceSeesAReturnRouteWhoseGatewayTheKernelIgnores(t *testing.T) {
	lab.InstallCNI(t, "calico") // node readers for vpn-trace
	waitTunnel(t)
	web := webPodIP(t)
	lab.SetVPNPodIPForward(t, true)
	lab.DropMasquerade(t)
	eventually(t, 10*time.Second, func() error {
		if !laptopReachesWeb(t, web) {
			return tunnelErr("web pod not reachable through the onlink return route")
		}
		return nil
	})
	lab.ReturnRouteWithoutOnlink(t)
	assert.False(t, laptopReachesWeb(t, web), "the kernel ignores a gateway routed with scope host: replies are lost")
	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
	status, _, fs := r.check(t, "VPN005")
	assert.Equal(t, "fail", status, findingText(fs))
	assert.Contains(t, findingText(fs), "is routed with scope host")
	assert.Contains(t, findingText(fs), "the route needs onlink")
}
