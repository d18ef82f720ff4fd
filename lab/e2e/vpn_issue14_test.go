//go:build lab

package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 14's vpn-trace judgements on the real lab: masquerade written with nft only, a pool the
// cluster routes back, a server that pushes no route, a tunnel MTU black hole. Each runs the
// broken lab and the fixed one (the faults' cleanup restores the lab).

// findingWithCode is the one finding of check id with code, "" when there is none.
func findingWithCode(t *testing.T, r lanaccessRun, id, code string) (string, map[string]any) {
	t.Helper()
	_, _, fs := r.check(t, id)
	for _, f := range fs {
		if f.Code == code {
			return f.Message, f.Evidence
		}
	}
	return "", nil
}

func TestVPNTraceReadsAMasqueradeWrittenWithNft(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	lab.DropMasquerade(t)
	lab.DropReturnRoute(t)
	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
	status, _, fs := r.check(t, "VPN005")
	assert.Equal(t, "fail", status, findingText(fs))

	lab.MasqueradeWithNft(t)
	eventually(t, 10*time.Second, func() error {
		if !laptopReachesWeb(t, webPodIP(t)) {
			return errors.New("the laptop does not reach the web pod through the nft masquerade")
		}
		return nil
	})
	r = runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN005")
	status, _, fs = r.check(t, "VPN005")
	assert.Equal(t, "pass", status, findingText(fs))
	msg, ev := findingWithCode(t, r, "VPN005", "VPN005-MASQUERADED")
	assert.Contains(t, msg, "oifname \"eth0\" masquerade", findingText(fs))
	assert.Contains(t, ev["readWith"], "nft -j")
}

func TestVPNTraceSeesThePoolRoutedBackFromTheClient(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	lab.DropMasquerade(t) // the nodes still route the pool back to node-vpn
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
	status, _, fs := r.check(t, "VPN005")
	assert.Equal(t, "pass", status, findingText(fs))
	msg, _ := findingWithCode(t, r, "VPN005", "VPN005-ROUTED-BACK")
	assert.Contains(t, msg, "from this machine a pod answered through the tunnel", findingText(fs))
	_, v := verdict(t, r)
	assert.NotEqual(t, "return path", v.Evidence["layer"], v.Message)
}

var pushRoute = regexp.MustCompile(`(?m)^\s*push "route [^"]*"\n`)

// laptopRoutesPods reports whether the laptop sends the pod network into the tunnel.
func laptopRoutesPods(t *testing.T) bool {
	t.Helper()
	out, err := lab.Exec(context.Background(), lab.Laptop(), "ip", "-o", "route", "get", webPodIP(t))
	return err == nil && strings.Contains(out, "dev tun0")
}

// serverPushesNoRoute turns forwarding on in the VPN pod and drops the server's pushed routes
// until cleanup, which waits until the laptop has them back.
func serverPushesNoRoute(t *testing.T) {
	t.Helper()
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	awaitPushedRoutesAtCleanup(t)
	lab.EditConfigMap(t, "vpn", "openvpn-config", "openvpn.conf", func(conf string) string {
		return pushRoute.ReplaceAllString(conf, "")
	})
}

// awaitPushedRoutesAtCleanup waits at cleanup until the laptop routes the pod network into the
// tunnel again. Registered before the faults, it runs after they are undone: the next tests
// need the pushed routes back.
func awaitPushedRoutesAtCleanup(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		eventually(t, 60*time.Second, func() error {
			if !laptopRoutesPods(t) {
				return errors.New("the laptop has not got the pushed routes back")
			}
			return nil
		})
	})
}

func TestVPNTraceAServerPushingNoRouteIsTheRoutesVerdict(t *testing.T) {
	serverPushesNoRoute(t)
	eventually(t, 60*time.Second, func() error {
		if laptopRoutesPods(t) {
			return errors.New("the laptop still routes the pod network into the tunnel")
		}
		if !lab.Ping(lab.Laptop(), lab.VPNServerTunnelIP(), time.Second) {
			return errTunnelDown
		}
		return nil
	})
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
	msg, _ := findingWithCode(t, r, "VPN004", "VPN004-NO-PUSHED-ROUTE")
	assert.Contains(t, msg, "the server pushes no route to", hopLines(t, r, "VPN004"))
	hops := hopLines(t, r, "VPN007")
	assert.Regexp(t, `fail [^\n]*hop 2, pod IP [^\n]*the first silent hop points at the client's routes, not forwarding`, hops)
	vs, v := verdict(t, r)
	assert.Equal(t, "fail", vs)
	assert.Equal(t, "routes", v.Evidence["layer"], v.Message)
	assert.Contains(t, v.Remediation, `push "route 10.96.0.0 255.255.0.0"`)
}

var largestSize = regexp.MustCompile(`the largest size that passes is (\d+) bytes`)

// assertLargestUnderTheLink checks the largest size a black-hole finding names: under the
// link's 1400 by the encapsulation overhead, and well above the small probe.
func assertLargestUnderTheLink(t *testing.T, msg string) {
	t.Helper()
	m := largestSize.FindStringSubmatch(msg)
	require.NotNil(t, m, msg)
	largest, _ := strconv.Atoi(m[1])
	assert.Greater(t, largest, 1200, msg)
	assert.Less(t, largest, 1400, "the encapsulation overhead makes the inner limit smaller than the link's: %s", msg)
}

func TestVPNTraceFindsATunnelMTUBlackHoleFromTheClient(t *testing.T) {
	lab.SetVPNPodIPForward(t, true)
	waitTunnel(t)
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client", "--only", "VPN001,VPN007")
	hops := hopLines(t, r, "VPN007")
	assert.NotContains(t, hops, "MTU", "no black hole on the healthy lab")
	_, _, fs := r.check(t, "VPN007")
	require.NotEmpty(t, fs)
	assert.Contains(t, findingText(fs), "Don't-Fragment packets up to 1500 bytes pass", hops)

	lab.LowerLinkMTU(t, lab.VPNNode().Name, 1400)
	r = runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client", "--only", "VPN001,VPN007")
	msg, _ := findingWithCode(t, r, "VPN007", "VPN007-MTU-BLACK-HOLE")
	require.NotEmpty(t, msg, hopLines(t, r, "VPN007"))
	assertLargestUnderTheLink(t, msg)
}

func TestVPNTraceAClientRoutingThePodNetworkItselfIsNotTheRoutesVerdict(t *testing.T) {
	serverPushesNoRoute(t)
	// The client ignores what the server pushes and routes the pod and Service ranges itself.
	lab.SetLaptopClient(t, "route-nopull", "route 10.244.0.0 255.255.0.0", "route 10.96.0.0 255.255.0.0")
	eventually(t, 60*time.Second, func() error {
		if !laptopRoutesPods(t) {
			return errors.New("the laptop does not route the pod network into the tunnel")
		}
		return nil
	})
	r := runLanaccess(t, lab.Laptop(), vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--from-client")
	msg, _ := findingWithCode(t, r, "VPN004", "VPN004-NO-PUSHED-ROUTE")
	assert.Contains(t, msg, "the server pushes no route to", hopLines(t, r, "VPN004"))
	hops := hopLines(t, r, "VPN007")
	assert.Regexp(t, `hop 2, pod IP [^\n]*: answered`, hops)
	_, v := verdict(t, r)
	assert.NotEqual(t, "routes", v.Evidence["layer"], v.Message)
}

func TestVPNTraceFindsTheTunnelMTUBlackHoleFromThePodToItsPeer(t *testing.T) {
	waitTunnel(t)
	// OpenVPN rewrites its status file every second: a client that has just reconnected (an
	// earlier test restarted the server or the laptop) is listed at the next write.
	peerSwept := regexp.MustCompile(`hop 1, tunnel peer 10\.8\.0\.\d+: answered[^\n]*Don't-Fragment packets up to 1500 bytes pass`)
	eventually(t, 20*time.Second, func() error {
		r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN006")
		if hops := hopLines(t, r, "VPN006"); !peerSwept.MatchString(hops) {
			return fmt.Errorf("the status file names no peer the pod sweeps:\n%s", hops)
		}
		return nil
	})

	lab.LowerLinkMTU(t, lab.VPNNode().Name, 1400)
	r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN006")
	msg, _ := findingWithCode(t, r, "VPN006", "VPN006-MTU-BLACK-HOLE")
	require.NotEmpty(t, msg, hopLines(t, r, "VPN006"))
	assert.Contains(t, msg, "hop 1, tunnel peer 10.8.0.")
	assertLargestUnderTheLink(t, msg)
}
