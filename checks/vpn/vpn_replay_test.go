package vpn

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
)

// clientScenarios are ladders from this machine that end differently: routes that miss the
// tunnel (a kernel without a route: ENETUNREACH), an MTU black hole swept from here, a pod
// silent behind an answering peer (deadlines), and a --public host name resolved here.
func clientScenarios() map[string]func(t *testing.T) *vpnFixture {
	forwardingOn := func(p *corev1.Pod, o *Options) { enableForwardInit(true)(p, o); fromClient(o) }
	return map[string]func(t *testing.T) *vpnFixture{
		"no route at all": func(t *testing.T) *vpnFixture {
			t.Helper()
			f := noPushFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, forwardingOn, serverConfigReply(t, "openvpn-server-nopush.conf"))
			unreachable := &net.OpError{Op: "dial", Net: "udp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
			p := everyHopAnswers("10.8.0.6")
			p.sourceErr = map[netip.Addr]error{netip.MustParseAddr("10.244.1.7"): unreachable, netip.MustParseAddr("10.96.0.10"): unreachable}
			p.query = nil
			f.env.Prober = p
			return f
		},
		"routes outside the tunnel": func(t *testing.T) *vpnFixture {
			t.Helper()
			f := noPushFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, forwardingOn, serverConfigReply(t, "openvpn-server-nopush.conf"))
			table, sources := clientRouting(t, "client-routes-none")
			f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.6"), netip.MustParseAddr("192.168.1.20")},
				connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
				table:   table, sources: sources}
			return f
		},
		"MTU black hole": func(t *testing.T) *vpnFixture {
			t.Helper()
			f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, forwardingOn)
			mtu, df := clientSweep(t, "mtu-blackhole")
			p := everyHopAnswers("10.8.0.2")
			p.mtu, p.df = mtu, df
			f.env.Prober = p
			return f
		},
		"peer answers, pod silent": func(t *testing.T) *vpnFixture {
			t.Helper()
			f := newVPNFixture(t, vpnScenario{}, func(_ *corev1.Pod, o *Options) { fromClient(o) })
			f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.2")},
				connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED}}
			return f
		},
		"every hop answers, public name": func(t *testing.T) *vpnFixture {
			t.Helper()
			f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, func(p *corev1.Pod, o *Options) {
				forwardingOn(p, o)
				o.Public = "vpn.example.com:443"
			})
			p := everyHopAnswers("10.8.0.2")
			p.resolved["vpn.example.com"] = []netip.Addr{netip.MustParseAddr("198.51.100.80")}
			p.connect[netip.MustParseAddrPort("198.51.100.80:443")] = syscall.ECONNREFUSED
			f.env.Prober = p
			return f
		},
	}
}

// judgedRun is every check's status and findings, as a replay must give them again.
func judgedRun(t *testing.T, f *vpnFixture) string {
	t.Helper()
	var b strings.Builder
	for _, c := range Checks(f.env) {
		st, reason, fs := f.run(t, c)
		b.WriteString(c.ID + " " + string(st) + " " + reason + "\n")
		for _, x := range fs {
			b.WriteString("  " + string(x.Severity) + " " + x.Code + " " + x.Object + ": " + x.Message + "\n")
		}
	}
	return b.String()
}

// The ladder from this machine (--from-client) is recorded at its prober: replaying the bundle
// gives the same statuses, findings and messages with no packet sent.
func TestTheClientLadderReplaysFromItsRecordedProber(t *testing.T) {
	for name, scenario := range clientScenarios() {
		t.Run(name, func(t *testing.T) {
			live := scenario(t)
			rec := replay.NewRecorder("vpn-trace", "test")
			live.env.Prober = facts.RecordingProber(live.env.Prober, rec)
			want := judgedRun(t, live)
			require.Contains(t, want, "VPN007 ", want)
			if strings.Contains(name, "public") {
				require.Contains(t, want, "public address vpn.example.com:443: answered (connection refused", want)
			}

			var buf bytes.Buffer
			require.NoError(t, rec.Bundle().Write(&buf))
			b, err := replay.Read(&buf, "bundle")
			require.NoError(t, err)
			require.NotEmpty(t, b.Calls)

			again := scenario(t)
			again.env.Prober = facts.ReplayingProber(replay.NewPlayer(b))
			assert.Equal(t, want, judgedRun(t, again))
		})
	}
}

// A question the bundle does not hold is an ERROR naming it, never a hop's outcome.
func TestAClientLadderQuestionTheBundleDoesNotHoldIsAnError(t *testing.T) {
	live := clientScenarios()["MTU black hole"](t)
	rec := replay.NewRecorder("vpn-trace", "test")
	live.env.Prober = facts.RecordingProber(live.env.Prober, rec)
	_, _, _ = live.run(t, VPNClientLadder(live.env))
	b := rec.Bundle()
	var kept []replay.Call
	for _, c := range b.Calls {
		if c.Method != "prober.SendDF" || !strings.Contains(string(c.Args), `"size":1304`) {
			kept = append(kept, c)
		}
	}
	require.Less(t, len(kept), len(b.Calls))
	b.Calls = kept

	again := clientScenarios()["MTU black hole"](t)
	again.env.Prober = facts.ReplayingProber(replay.NewPlayer(b))
	st, reason, _ := again.run(t, VPNClientLadder(again.env))
	assert.Equal(t, engine.StatusError, st)
	// the pod's sweep or the VIP's, whichever asked first
	assert.Regexp(t, `not in the replay bundle: call prober\.SendDF \{"size":1304,"to":"10\.(244\.1\.7|96\.0\.10):53"\}`, reason)
}
