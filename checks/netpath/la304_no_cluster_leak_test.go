package netpath

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestNoClusterLeak(t *testing.T) {
	t.Run("NXDOMAIN for cluster names on every address passes", func(t *testing.T) {
		f := newNetFixture(t)
		for i := range lanNodeIPs {
			f.serveDNS(i, nil)
		}
		st, o := runNetCheck(t, NoClusterLeak(f.env()))
		assert.Equal(t, engine.StatusPass, st, "findings: %+v", o.Findings)
		info := netFindings(o, engine.SeverityInfo, "Service lan-dns/lan-dns")
		require.Len(t, info, 1)
		assert.Contains(t, info[0].Evidence["answers"].(map[string]any)["127.0.0.12"].(map[string]any)["kubernetes.default.svc.cluster.local"], "NXDOMAIN")
	})
	t.Run("a DNS pod with ClusterFirst resolving cluster names fails with the patch to paste", func(t *testing.T) {
		f := newNetFixture(t)
		f.setup.DNSWorkload.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
		for i := range lanNodeIPs {
			z := healthyLANZone()
			if i == 1 {
				z.Outside["kubernetes.default.svc.cluster.local."] = []netip.Addr{netip.MustParseAddr("10.96.0.1")}
				z.Outside["kube-dns.kube-system.svc.cluster.local."] = []netip.Addr{netip.MustParseAddr("10.96.0.10")}
			}
			f.serveDNS(i, z)
		}
		st, o := runNetCheck(t, NoClusterLeak(f.env()))
		assert.Equal(t, engine.StatusFail, st)
		fails := netFindings(o, engine.SeverityFail, lanNode(1))
		require.Len(t, fails, 2)
		assert.Contains(t, fails[0].Message, "10.96.0.1")
		assert.Contains(t, fails[0].Message, "dnsPolicy is ClusterFirst")
		assert.Contains(t, fails[0].Remediation, `kubectl -n lan-dns patch deployment lan-dns`)
		assert.Contains(t, fails[0].Remediation, `"dnsPolicy":"Default"`)
		assert.Empty(t, netFindings(o, engine.SeverityFail, lanNode(0)))
	})
	t.Run("a dead address is one finding, not one per name", func(t *testing.T) {
		f := newNetFixture(t)
		f.cfg.Timeout = 300 * time.Millisecond
		f.serveDNS(0, nil)
		f.serveDNS(1, nil)
		f.blackhole(2)
		st, o := runNetCheck(t, NoClusterLeak(f.env()))
		assert.Equal(t, engine.StatusFail, st)
		assert.Len(t, netFindings(o, engine.SeverityFail, lanNode(2)), 1)
	})
}
