package vpn

import (
	"context"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func verdictOf(t *testing.T, f *vpnFixture) (engine.Status, engine.Finding) {
	t.Helper()
	st, reason, fs := f.run(t, VPNVerdict(f.env))
	require.Len(t, fs, 1, "one verdict per replica; reason %q", reason)
	assert.Equal(t, "Pod "+vpnPodRef, fs[0].Object)
	return st, fs[0]
}

func TestForwardingOffIsTheVerdictWithTheManifestChange(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", nat: "nat-empty"}, nil)
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusFail, st)
	assert.Equal(t, "forwarding off", v.Evidence["layer"])
	assert.Contains(t, v.Message, "Forwarding is off in Pod vpn/openvpn-7d9f8-x2x4k (net.ipv4.ip_forward=0)")
	assert.Contains(t, v.Remediation, "kubectl -n vpn patch deployment openvpn --patch-file enable-ip-forward.yaml")
	assert.Contains(t, v.Remediation, "privileged: true")
}

func TestForwardingOffSeenFromTheClientSaysThePeerAnsweredAndThePodDidNot(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", nat: "nat-masq"}, func(_ *corev1.Pod, o *Options) { fromClient(o) })
	f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.2")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED}}
	_, v := verdictOf(t, f)
	assert.Contains(t, v.Message, "from this machine: the server answered, 10.244.1.7 (cluster DNS pod kube-system/coredns-5d78c-q8lzt) was silent")
}

func TestAHandFixIsADurabilityWarning(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, nil)
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusWarn, st)
	assert.Equal(t, "durability", v.Evidence["layer"])
	assert.Contains(t, v.Message, "only by hand")
	assert.Contains(t, v.Remediation, "enable-ip-forward")
}

func TestTheFixInTheManifestPasses(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, enableForwardInit(true))
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusPass, st, v.Message)
	assert.Contains(t, v.Message, "No broken layer found")
	assert.Contains(t, v.Message, "--from-client")
}

func TestNoMasqueradeIsTheReturnPathVerdict(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, enableForwardInit(true))
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusFail, st)
	assert.Equal(t, "return path", v.Evidence["layer"])
	assert.Contains(t, v.Message, "the client pool 10.8.0.2/32 is not masqueraded")
	assert.Contains(t, v.Remediation, "masquerade-vpn-clients")
}

func TestAMasqueradeScopedToTheTunnelIsTheReturnPathVerdict(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq-tun0"}, enableForwardInit(true))
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusFail, st)
	assert.Equal(t, "return path", v.Evidence["layer"])
	assert.Contains(t, v.Message, "is masqueraded, but not for the packets the ladder sends to 10.244.1.7")
	assert.NotContains(t, v.Message, "No broken layer")
	assert.Contains(t, v.Remediation, "masquerade-vpn-clients")
}

func TestTheReturnPathSeenFromTheClient(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-empty"}, func(p *corev1.Pod, o *Options) {
		enableForwardInit(true)(p, o)
		fromClient(o)
	})
	f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.2")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED}}
	_, v := verdictOf(t, f)
	assert.Equal(t, "return path", v.Evidence["layer"])
	assert.Contains(t, v.Message, "(from this machine: the server answered, 10.244.1.7")
}

// The pod's own resolver is not the clients' path: a failure there is a VPN006 warning, and the
// verdict looks further (here: the manifest fix is in place, so nothing is broken).
func TestNamesFailingInsideThePodAreNotTheVerdict(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq", namesFail: true}, enableForwardInit(true))
	st, v := verdictOf(t, f)
	assert.Equal(t, engine.StatusPass, st, v.Message)
	st, _, fs := f.run(t, VPNPodLadder(f.env))
	assert.Equal(t, engine.StatusWarn, st)
	assert.Contains(t, messages(fs), "the VPN pod's own resolver, which matters only if the server resolves names itself")
}

func TestNamesFailingThroughTheTunnelIsTheDNSVerdictWithThePushToAdd(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1", nat: "nat-masq"}, func(p *corev1.Pod, o *Options) {
		enableForwardInit(true)(p, o)
		fromClient(o)
	})
	f.env.Prober = &fakeProber{local: []netip.Addr{netip.MustParseAddr("10.8.0.2")},
		connect: map[netip.AddrPort]error{netip.MustParseAddrPort("10.8.0.1:1194"): syscall.ECONNREFUSED},
		query: map[netip.AddrPort]string{netip.MustParseAddrPort("10.244.1.7:53"): "NOERROR",
			netip.MustParseAddrPort("10.96.0.10:53"): "NOERROR"}}
	_, v := verdictOf(t, f)
	assert.Equal(t, "DNS plumbing", v.Evidence["layer"])
	assert.Contains(t, v.Remediation, `push "dhcp-option DNS 10.96.0.10"`)
	assert.Contains(t, v.Remediation, `push "dhcp-option DOMAIN svc.cluster.local"`)
}

func TestTheSysctlsVariantIsChosenWhenTheKubeletAllowsIt(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", nat: "nat-masq"}, nil)
	f.env.Configz = func(context.Context, string) ([]byte, error) {
		return []byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.ip_forward"]}}`), nil
	}
	_, v := verdictOf(t, f)
	assert.Contains(t, v.Remediation, "sysctls:")
	assert.NotContains(t, v.Remediation, "privileged")
	assert.Contains(t, v.Message, "securityContext.sysctls, which needs no privilege")
}

// The verdict must run when VPN002 fails: it depends on VPN001 only and computes what it needs.
func TestTheSuiteReachesAVerdictWhenForwardingFails(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0", nat: "nat-empty"}, nil)
	r := &engine.Runner{Checks: Checks(f.env), DefaultTimeout: 30 * time.Second}
	require.NoError(t, r.Validate())
	results := r.Run(context.Background())
	got := map[string]engine.Status{}
	for _, res := range results {
		got[res.ID] = res.Status
	}
	assert.Equal(t, map[string]engine.Status{
		"VPN001": engine.StatusPass, "VPN002": engine.StatusFail, "VPN003": engine.StatusFail, "VPN004": engine.StatusPass,
		"VPN005": engine.StatusFail, "VPN006": engine.StatusPass, "VPN007": engine.StatusSkip, "VPN008": engine.StatusFail,
	}, got)
	// Each fact was computed once, whichever check asked first.
	counts := map[string]int{}
	for _, c := range f.exec.Calls() {
		counts[c.Command[0]+" "+c.Command[len(c.Command)-1]]++
	}
	assert.Equal(t, 1, counts["cat /proc/sys/net/ipv4/ip_forward"])
}
