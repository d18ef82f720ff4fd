package vpn

import (
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// A server that pushes no route to the cluster (openvpn-server-nopush.conf) with the
// tunnel-server recording, whose status file lists the client 10.8.0.6.
func noPushFixture(t *testing.T, sc vpnScenario, mutate func(*corev1.Pod, *Options), conf kubetest.Reply) *vpnFixture {
	t.Helper()
	sc.tunnel = "tunnel-server"
	f := newVPNFixture(t, sc, mutate)
	f.exec.On(vpnPodRef, "cat /etc/openvpn/openvpn.conf", conf).
		On(vpnPodRef, "cat /tmp/openvpn-status.log", kubetest.Reply{Stdout: "TITLE,OpenVPN 2.6.14\nROUTING_TABLE,10.8.0.6,laptop,192.168.1.20:51515,2026-11-30 03:00:00,1796007600\n"})
	return f
}

func TestAServerThatPushesNoRouteToTheClusterIsTheRoutesVerdictNotForwarding(t *testing.T) {
	f := noPushFixture(t, vpnScenario{forwarding: "0", nat: "nat-masq"}, nil, serverConfigReply(t, "openvpn-server-nopush.conf"))
	st, _, fs := f.run(t, VPNTunnel(f.env))
	assert.Equal(t, engine.StatusWarn, st, messages(fs))
	w := byCode(t, fs, "VPN004-NO-PUSHED-ROUTE")
	assert.Contains(t, w.Message, "the server pushes no route to 10.244.1.7 (cluster DNS pod kube-system/coredns-5d78c-q8lzt) nor 10.96.0.10 (Service kube-system/kube-dns)")
	assert.Equal(t, "# in the OpenVPN server configuration, then restart the server and reconnect the clients:\n"+
		`push "route 10.244.1.0 255.255.255.0"`+"\n"+`push "route 10.96.0.0 255.240.0.0"`, w.Remediation, "the node's pod range and the ServiceCIDR")

	_, v := verdictOf(t, f)
	assert.Equal(t, "routes", v.Evidence["layer"])
	assert.Contains(t, v.Message, "The client's routes, not forwarding: the server pushes no route to 10.244.1.7")
	assert.Contains(t, v.Message, "forwarding is off in the pod too (net.ipv4.ip_forward=0): fix both")
	assert.Contains(t, v.Remediation, `push "route 10.244.1.0 255.255.255.0"`)
	assert.Contains(t, v.Remediation, "enable-ip-forward.yaml")

	// The fix round-trips: the configuration with the pushed routes is judged again.
	fixed := serverConfigReply(t, "openvpn-server-nopush.conf")
	fixed.Stdout += "\n" + w.Remediation + "\n"
	g := noPushFixture(t, vpnScenario{forwarding: "0", nat: "nat-masq"}, nil, fixed)
	st, _, fs = g.run(t, VPNTunnel(g.env))
	assert.Equal(t, engine.StatusPass, st, messages(fs))
	byCode(t, fs, "VPN004-PUSHED-ROUTES")
	_, v = verdictOf(t, g)
	assert.Equal(t, "forwarding off", v.Evidence["layer"], v.Message)
}

func TestFromTheClientATargetOutsideTheTunnelIsTheClientsRoutes(t *testing.T) {
	f := noPushFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, func(p *corev1.Pod, o *Options) {
		enableForwardInit(true)(p, o)
		fromClient(o)
	}, serverConfigReply(t, "openvpn-server-nopush.conf"))
	table, sources := clientRouting(t, "client-routes-none")
	f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.6"), netip.MustParseAddr("192.168.1.20")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
		table:   table, sources: sources}
	st, _, fs := f.run(t, VPNClientLadder(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	first := byCode(t, fs, "VPN007-FIRST-SILENT-HOP")
	assert.Contains(t, first.Message, "pod IP 10.244.1.7")
	assert.Contains(t, first.Message, "the first silent hop points at the client's routes, not forwarding: this machine leaves through eth0 via 192.168.1.1 (route 0.0.0.0/0) from 192.168.1.20, not into the tunnel")
	assert.Equal(t, "goes into the tunnel through tun0 (route 10.8.0.0/24), from 10.8.0.6", fs[0].Evidence["route"])

	_, v := verdictOf(t, f)
	assert.Equal(t, "routes", v.Evidence["layer"])
	assert.Contains(t, v.Message, "10.244.1.7 (cluster DNS pod kube-system/coredns-5d78c-q8lzt) leaves through eth0")
	assert.Contains(t, v.Message, "the server pushes no route to them")
}

func TestAClientWithItsOwnRoutesIsNotTheRoutesVerdict(t *testing.T) {
	f := noPushFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, func(p *corev1.Pod, o *Options) {
		enableForwardInit(true)(p, o)
		fromClient(o)
	}, serverConfigReply(t, "openvpn-server-nopush.conf"))
	table, sources := clientRouting(t, "client-routes-pushed")
	p := everyHopAnswers("10.8.0.6")
	p.table, p.sources = table, sources
	f.env.Prober = p
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusPass, st, v.Message)
	assert.Equal(t, "none", v.Evidence["layer"])
}

func TestAHopThatAnswersOutsideTheTunnelDoesNotTestTheVPN(t *testing.T) {
	f := noPushFixture(t, vpnScenario{forwarding: "1"}, func(_ *corev1.Pod, o *Options) { fromClient(o) }, vpnConfigReply(t))
	table, sources := clientRouting(t, "client-routes-none")
	f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.6")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
		query:   map[netip.AddrPort]string{netip.MustParseAddrPort("10.244.1.7:53"): "NOERROR"},
		table:   table, sources: sources}
	_, _, fs := f.run(t, VPNClientLadder(f.env))
	w := byCode(t, fs, "VPN007-NOT-THROUGH-TUNNEL")
	assert.Contains(t, w.Message, "pod IP 10.244.1.7")
	assert.Contains(t, w.Message, "so this answer does not test the VPN")
}

// A client without a default route (the lab's laptop) cannot even pick a source address: the
// kernel says the network is unreachable, which is the client's routes too.
func TestAClientWithNoRouteAtAllIsTheRoutesVerdict(t *testing.T) {
	f := noPushFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, func(p *corev1.Pod, o *Options) {
		enableForwardInit(true)(p, o)
		fromClient(o)
	}, serverConfigReply(t, "openvpn-server-nopush.conf"))
	unreachable := &net.OpError{Op: "dial", Net: "udp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	p := everyHopAnswers("10.8.0.6")
	p.sourceErr = map[netip.Addr]error{netip.MustParseAddr("10.244.1.7"): unreachable, netip.MustParseAddr("10.96.0.10"): unreachable}
	p.query = nil // what the kernel cannot route gets no answer
	f.env.Prober = p
	_, _, fs := f.run(t, VPNClientLadder(f.env))
	first := byCode(t, fs, "VPN007-FIRST-SILENT-HOP")
	assert.Contains(t, first.Message, "the client's routes, not forwarding: this machine has no route to it (network unreachable)")
	_, v := verdictOf(t, f)
	assert.Equal(t, "routes", v.Evidence["layer"], v.Message)
}
