//go:build lab

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// `kubectl lanaccess vpn-trace` against the lab's OpenVPN pod (node-vpn's namespace is the
// pod's own). --from-client runs the plugin inside the laptop namespace, where the VPN client is
// connected, so VPN007's packets really cross the tunnel.

const vpnTraceTimeout = 4 * time.Minute

// verdict returns VPN008's single finding.
func verdict(t *testing.T, r lanaccessRun) (string, engine.Finding) {
	t.Helper()
	status, reason, fs := r.check(t, "VPN008")
	require.Len(t, fs, 1, "one verdict for the one replica (reason %q): %s", reason, findingText(fs))
	return status, fs[0]
}

// hopLines are VPN007's or VPN006's findings as text, in ladder order.
func hopLines(t *testing.T, r lanaccessRun, id string) string {
	t.Helper()
	_, _, fs := r.check(t, id)
	return findingText(fs)
}

func TestVPNTraceForwardingOffGivesTheForwardingVerdictAndTheClientSeesOnlyThePeer(t *testing.T) {
	require.False(t, lab.VPNPodIPForward(t))
	waitTunnel(t)
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
	assert.Equal(t, 1, r.Exit)
	status, _, fs := r.check(t, "VPN002")
	assert.Equal(t, "fail", status, findingText(fs))
	vs, v := verdict(t, r)
	assert.Equal(t, "fail", vs)
	assert.Equal(t, "forwarding off", v.Evidence["layer"])
	assert.Contains(t, v.Message, "net.ipv4.ip_forward=0")
	assert.Contains(t, v.Remediation, "kubectl -n vpn patch deployment openvpn")
	hops := hopLines(t, r, "VPN007")
	assert.Contains(t, hops, "tunnel peer "+lab.VPNServerTunnelIP()+": answered", hops)
	assert.Regexp(t, `fail [^\n]*hop 2, pod IP [0-9.]+ [^\n]*: silent`, hops)
}

func TestVPNTraceHandFixGivesTheDurabilityWarning(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn")
	status, _, fs := r.check(t, "VPN002")
	assert.Equal(t, "pass", status, findingText(fs))
	status, _, fs = r.check(t, "VPN003")
	assert.Equal(t, "warn", status, findingText(fs))
	assert.Contains(t, findingText(fs), "a hand fix")
	vs, v := verdict(t, r)
	assert.Equal(t, "warn", vs, v.Message)
	assert.Equal(t, "durability", v.Evidence["layer"], "%s\nVPN006:\n%s", v.Message, hopLines(t, r, "VPN006"))
	assert.Contains(t, v.Remediation, "enable-ip-forward")
}

func TestVPNTraceFixInTheManifestPasses(t *testing.T) {
	for _, variant := range []string{"openvpn-fixed-initcontainer", "openvpn-fixed-sysctls"} {
		t.Run(variant, func(t *testing.T) {
			lab.ApplyVariant(t, variant, "60-openvpn", "vpn", "openvpn")
			r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn")
			for _, id := range []string{"VPN002", "VPN003", "VPN004", "VPN005"} {
				status, _, fs := r.check(t, id)
				assert.Equal(t, "pass", status, "%s: %s", id, findingText(fs))
			}
			vs, v := verdict(t, r)
			assert.Equal(t, "pass", vs, "%s\nVPN006:\n%s", v.Message, hopLines(t, r, "VPN006"))
			assert.Equal(t, "none", v.Evidence["layer"])
			assert.Equal(t, 0, r.Exit, r.Stderr)
		})
	}
}

func TestVPNTraceWithoutMasqueradeOrReturnRouteGivesTheReturnPathVerdict(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	lab.DropMasquerade(t)
	lab.DropReturnRoute(t)
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
	status, _, fs := r.check(t, "VPN005")
	assert.Equal(t, "fail", status, findingText(fs))
	assert.Contains(t, findingText(fs), "no masquerade for the client pool "+lab.VPNPool())
	vs, v := verdict(t, r)
	assert.Equal(t, "fail", vs)
	assert.Equal(t, "return path", v.Evidence["layer"], v.Message)
	assert.Contains(t, v.Remediation, "MASQUERADE")
	assert.Contains(t, v.Message, "from this machine: the server answered")
}

func TestVPNTraceNamesFailingWhileTheVIPAnswersGivesTheDNSVerdict(t *testing.T) {
	// Forwarding on: IPs work through the tunnel; the laptop's resolver is the internet DNS
	// and the server pushes no DNS, so cluster names do not resolve there.
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
	hops := hopLines(t, r, "VPN007")
	assert.Contains(t, hops, fmt.Sprintf("cluster DNS VIP %s (Service kube-system/kube-dns): answered", lab.ClusterDNSIP()), hops)
	assert.Regexp(t, `fail [^\n]*hop 4, names kubernetes\.default\.svc\.cluster\.local: silent`, hops)
	vs, v := verdict(t, r)
	assert.Equal(t, "fail", vs)
	assert.Equal(t, "DNS plumbing", v.Evidence["layer"], v.Message)
	assert.True(t, strings.HasPrefix(v.Message, "DNS plumbing, not forwarding"), v.Message)
	assert.Contains(t, v.Remediation, `push "dhcp-option DNS `+lab.ClusterDNSIP()+`"`)
}
