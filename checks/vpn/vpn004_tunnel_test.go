package vpn

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestAPointToPointTunnelGivesServerAddressPeerAndPool(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	st, _, fs := f.run(t, VPNTunnel(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	p := f.facts(t, facts.NeedTunnel)
	require.NoError(t, p.TunnelErr)
	tun := p.Tunnel
	assert.Equal(t, netip.MustParseAddr("10.8.0.1"), tun.ServerAddr)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.8.0.2")}, tun.Peers)
	assert.Equal(t, netip.MustParsePrefix("10.8.0.2/32"), tun.Pool)
	assert.Equal(t, "eth0", tun.Uplink)
	assert.Equal(t, "cluster.local", tun.Resolv.ClusterDomain())
	assert.Contains(t, fs[0].Message, "tun0 (tun) 10.8.0.1/32 peer 10.8.0.2/32")
	assert.Contains(t, tun.ConfigFrom[0], "the command line of pid")
}

// vpnConfigReply is a server configuration as kylemanna/openvpn writes it.
func vpnConfigReply(t *testing.T) kubetest.Reply {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join("..", "..", "pkg", "linuxnet", "testdata", "openvpn-server.conf"))
	require.NoError(t, err)
	return kubetest.Reply{Stdout: string(conf)}
}

func TestAServerConfigurationGivesThePoolAndWhatIsPushed(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{tunnel: "tunnel-server"}, nil)
	f.exec.On(vpnPodRef, "cat /etc/openvpn/openvpn.conf", vpnConfigReply(t)).
		On(vpnPodRef, "cat /tmp/openvpn-status.log", kubetest.Reply{Stdout: "TITLE,OpenVPN 2.6.14\nROUTING_TABLE,10.8.0.6,laptop,192.168.1.20:51515,2026-11-30 03:00:00,1796007600\n"})
	st, _, fs := f.run(t, VPNTunnel(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	p := f.facts(t, facts.NeedTunnel)
	require.NoError(t, p.TunnelErr)
	tun := p.Tunnel
	assert.Equal(t, netip.MustParsePrefix("10.8.0.0/24"), tun.Pool)
	assert.Contains(t, tun.PoolSource, "/etc/openvpn/openvpn.conf")
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.8.0.6")}, tun.Peers)
	assert.Contains(t, messages(fs), "clients are told to use DNS [10.96.0.10] (push dhcp-option DNS), search [svc.cluster.local]")
}

func TestNoTunnelInterfaceFails(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	// The same namespace read before OpenVPN opened its tunnel: no tun_flags anywhere.
	rec := vpnReply(t, "tunnel-p2p")
	rec.Stdout = withoutSection(rec.Stdout, "tun")
	f.exec = &kubetest.FakeExecutor{}
	f.env.Exec = f.exec
	f.exec.On(vpnPodRef, "@@ip-addr", rec)
	st, _, fs := f.run(t, VPNTunnel(f.env))
	require.Equal(t, engine.StatusFail, st)
	assert.Contains(t, fs[0].Message, "no tun or tap interface")
	assert.Contains(t, fs[0].Remediation, "kubectl -n vpn logs openvpn-7d9f8-x2x4k -c openvpn --tail=50")
}

func TestACutOutputIsAnErrorNotANoTunnel(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	f.exec = (&kubetest.FakeExecutor{}).On(vpnPodRef, "@@ip-addr", kubetest.Reply{Stdout: "@@ip-addr\n1: lo inet 127.0.0.1/8\n"})
	f.env.Exec = f.exec
	st, reason, _ := f.run(t, VPNTunnel(f.env))
	assert.Equal(t, engine.StatusError, st)
	assert.Contains(t, reason, "cut")
}

// withoutSection empties one "@@name" section of a recorded output: its lines up to the next
// marker are dropped.
func withoutSection(out, name string) string {
	var b strings.Builder
	skipping := false
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "@@") && !strings.Contains(line, " ") {
			skipping = line == "@@"+name
			b.WriteString(line + "\n")
			continue
		}
		if !skipping {
			b.WriteString(line + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
