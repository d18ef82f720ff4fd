//go:build lab

package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

// Dual stack on the live lab (issue 13): lab.DualStack puts IPv6 on the LAN (fd00:10::11-13 on
// node-1..3, fd00:10::50 on the laptop), the nodes' IPv6 InternalIPs, both Services'
// externalIPs carrying them, and (mode "on") the zone answering AAAA with them. The lab's
// cluster is single-stack (its service CIDR is IPv4 only): the API server accepts the IPv6
// externalIPs on the single-stack Services, and kube-proxy captures none of them (each proxier
// keeps a Service's externalIPs of its own family, and there is no IPv6 proxier for a Service
// without an IPv6 ClusterIP: kubernetes pkg/proxy/serviceport.go, servicechangetracker.go; the
// lab runs that kube-proxy). So the AAAA answers
// send IPv6 clients where nothing answers, and doctor must fail it, not pass it.

func seedIPv6() []string {
	ips := lab.NodeIPs()
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, labkit.LANIPv6(ip))
	}
	return out
}

// fromLaptop runs a command in the laptop namespace, bounded.
func fromLaptop(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return lab.Exec(ctx, lab.Laptop(), argv...)
}

func TestDoctorFailsLA101WhenAAAAAnswersAddressesNoKubeProxyCaptures(t *testing.T) {
	lab.DualStack(t, "on")
	ctx := context.Background()
	for _, name := range []string{"traefik", "lan-dns"} {
		svc, err := lab.Client.CoreV1().Services("traefik").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Subset(t, svc.Spec.ExternalIPs, seedIPv6(), "the API server accepted the IPv6 externalIPs of %s", name)
		assert.Equal(t, []corev1.IPFamily{corev1.IPv4Protocol}, svc.Spec.IPFamilies, "%s stays single-stack", name)
	}

	// The real components: CoreDNS answers AAAA with the IPv6 addresses; the laptop reaches the
	// nodes over IPv6 (ping), and nothing answers HTTPS or DNS there, while IPv4 does.
	r, err := query(lab.NodeIPs()[0], probeHost, dns.TypeAAAA, "udp")
	require.NoError(t, err)
	var aaaa []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.AAAA); ok {
			aaaa = append(aaaa, a.AAAA.String())
		}
	}
	assert.ElementsMatch(t, seedIPv6(), aaaa)
	v6 := seedIPv6()[0]
	_, err = fromLaptop(t, "ping", "-6", "-c1", "-W2", v6)
	require.NoError(t, err, "the laptop reaches %s over IPv6", v6)
	_, err = fromLaptop(t, "curl", "-sk", "-m", "3", "-o", "/dev/null", "https://"+net.JoinHostPort(v6, "443")+"/")
	assert.Error(t, err, "nothing captures [%s]:443", v6)
	out, err := fromLaptop(t, "dig", "+tries=1", "+time=2", "@"+v6, probeHost, "A")
	assert.True(t, err != nil || !strings.Contains(out, "status: NOERROR"), "nothing answers DNS on [%s]:53: %s", v6, out)
	_, err = fromLaptop(t, "curl", "-sk", "-m", "3", "-o", "/dev/null", "https://"+lab.NodeIPs()[0]+"/")
	require.NoError(t, err, "IPv4 still works")

	res := doctor(t, "--only", "LA101,LA301,LA302", "--no-helpers", "--timeout", "2s")
	c := res.check(t, "LA101")
	require.Equal(t, "fail", c.Status, "%+v", c.Findings)
	var fixes []string
	for _, f := range c.Findings {
		if f.Code == "LA101-FAMILY-NOT-CAPTURED" {
			assert.Equal(t, "fail", f.Severity, "the zone answers AAAA with them")
			fixes = append(fixes, f.Remediation)
		}
		assert.NotContains(t, f.Remediation, "IN AAAA fd00", "never more AAAA answers for addresses nothing captures")
	}
	require.Len(t, fixes, 2, "one per Service: %+v", c.Findings)
	refusedOnIPv6Only(t, res.check(t, "LA301"))
	refusedOnIPv6Only(t, res.check(t, "LA302"))

	// The printed fixes, pasted: the Services keep their IPv4 addresses; the AAAA template then
	// answers addresses no Service carries (LA101 names it), and without it doctor passes.
	for _, fix := range fixes {
		pasteKubectl(t, fix)
	}
	lab.WaitProxySynced(t)
	c = doctor(t, "--only", "LA101", "--no-helpers").check(t, "LA101")
	for _, f := range c.Findings {
		assert.NotEqual(t, "LA101-FAMILY-NOT-CAPTURED", f.Code, "fixed: %+v", f)
	}
	assert.True(t, c.mentions("fail", "lan-dns"), "the AAAA template is left: %+v", c.Findings)
	lab.EditLanDNSCorefile(t, labkit.WithoutAAAATemplate)
	res = doctor(t, "--only", "LA101,LA301,LA302", "--no-helpers")
	for _, id := range []string{"LA101", "LA301", "LA302"} {
		assert.Equal(t, "pass", res.check(t, id).Status, "%s: %+v", id, res.check(t, id).Findings)
	}
}

// The Services carry the IPv6 addresses and the zone keeps answering AAAA with NODATA: IPv6
// clients use the A answers, the addresses are claimed for nothing: LA101 warns, and never
// suggests answering AAAA with addresses nothing captures; LA301 and LA302, which ask every
// address of the DNS Service, find the IPv6 ones refused (a workstation sent there gets no DNS).
func TestDoctorWarnsLA101WhenIPv6ExternalIPsAreAnsweredNoData(t *testing.T) {
	lab.DualStack(t, "no-aaaa")
	r, err := query(lab.NodeIPs()[0], probeHost, dns.TypeAAAA, "udp")
	require.NoError(t, err)
	assert.Equal(t, dns.RcodeSuccess, r.Rcode)
	assert.Empty(t, r.Answer, "NODATA")

	res := doctor(t, "--only", "LA101,LA301,LA302", "--no-helpers")
	c := res.check(t, "LA101")
	assert.Equal(t, "warn", c.Status, "%+v", c.Findings)
	codes := make([]string, 0, len(c.Findings))
	for _, f := range c.Findings {
		codes = append(codes, f.Code)
		assert.NotContains(t, f.Remediation, "IN AAAA", "%s", f.Code)
	}
	assert.Contains(t, codes, "LA101-IPV6-UNANSWERED")
	assert.Contains(t, codes, "LA101-FAMILY-NOT-CAPTURED")
	refusedOnIPv6Only(t, res.check(t, "LA301"))
	refusedOnIPv6Only(t, res.check(t, "LA302"))
}

// refusedOnIPv6Only: a DNS path check asks every address of the DNS Service; the IPv6 ones
// refuse (the node carries the address, nothing captures port 53 there), the IPv4 ones pass.
func refusedOnIPv6Only(t *testing.T, c checkResult) {
	t.Helper()
	assert.Equal(t, "fail", c.Status, "%s: %+v", c.ID, c.Findings)
	failed := 0
	for _, f := range c.Findings {
		if f.Severity != "fail" {
			continue
		}
		failed++
		assert.Contains(t, f.Object, "(fd00:10::", "%s fails an IPv4 address: %+v", c.ID, f)
		assert.Equal(t, c.ID+"-REFUSED", f.Code, "%+v", f)
	}
	assert.Positive(t, failed, "%s: %+v", c.ID, c.Findings)
}
