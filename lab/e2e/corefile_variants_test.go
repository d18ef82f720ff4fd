//go:build lab

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// The zone DNS's real-world shapes on the live lab (issue 13), each put in place by
// lab.LanDNSVariant (lab/manifests/variants/lan-dns-*.yaml, undone at cleanup): the zone served
// from the `.` block, and k3s's imported coredns-custom block, healthy and defined twice. Each
// test runs doctor and then asks the real CoreDNS of the lab, on every node address, the
// questions doctor's model answers: the model read from the cluster by doctor's own discovery
// (kube.Discover, imports expanded from the pods' volumes) must predict what CoreDNS does.

// modelQuestions are asked of the model and of the lab's CoreDNS.
var modelQuestions = []struct {
	name  string
	qtype uint16
}{
	{probeHost, dns.TypeA}, {"apps.example.com", dns.TypeA}, {"no-such-route.apps.example.com", dns.TypeA},
	{probeHost, dns.TypeAAAA}, {probeHost, dns.TypeMX}, {"example.org", dns.TypeA},
}

// discoveredCorefile is the Corefile doctor's discovery reads from the lab.
func discoveredCorefile(t *testing.T) *kube.Setup {
	t.Helper()
	dyn, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := kube.Discover(ctx, clientgo.Wrap(lab.Client), dyn, kube.Selection{AllNamespaces: true})
	require.NoError(t, err)
	require.NotNil(t, s.Corefile, "discovery reads the Corefile")
	return s
}

// assertCoreDNSAsPredicted asks every node address each model question over UDP and compares
// CoreDNS's answer with the model's outcome on the Service's target port.
func assertCoreDNSAsPredicted(t *testing.T, cf *corefile.Corefile, port string) {
	t.Helper()
	for _, q := range modelQuestions {
		o := cf.Query(corefile.Question{Name: q.name, Type: q.qtype, Port: port})
		require.True(t, o.Known() || o.Forwarded, "%s %s: the model cannot tell: %s", q.name, dns.TypeToString[q.qtype], o.Describe())
		for _, ip := range lab.NodeIPs() {
			r, err := query(ip, q.name, q.qtype, "udp")
			require.NoError(t, err, "%s %s on %s", q.name, dns.TypeToString[q.qtype], ip)
			what := q.name + " " + dns.TypeToString[q.qtype] + " on " + ip + ": model " + o.Describe()
			if o.Forwarded {
				// The upstream's answer: the lab's internet DNS resolves example.org.
				assert.Equal(t, dns.RcodeSuccess, r.Rcode, what)
				assert.NotEmpty(t, r.Answer, what)
				continue
			}
			assert.Equal(t, dns.RcodeToString[o.Rcode], dns.RcodeToString[r.Rcode], what)
			assert.Equal(t, o.Authoritative, r.Authoritative, what)
			var got, want []string
			for _, a := range o.Addrs() {
				want = append(want, a.String())
			}
			for _, rr := range r.Answer {
				switch v := rr.(type) {
				case *dns.A:
					got = append(got, v.A.String())
				case *dns.AAAA:
					got = append(got, v.AAAA.String())
				}
			}
			slices.Sort(got)
			assert.Equal(t, want, got, what)
			assert.Len(t, r.Answer, len(o.Records), what)
		}
	}
}

// serviceTargetPort is the Corefile port the DNS Service sends 53/UDP to.
func serviceTargetPort(t *testing.T, s *kube.Setup) string {
	t.Helper()
	for _, p := range s.DNSService.Spec.Ports {
		if p.Port == 53 && p.Protocol == "UDP" {
			return p.TargetPort.String()
		}
	}
	t.Fatal("the DNS Service has no 53/UDP")
	return ""
}

// The template README's pattern: the zone's templates inside `. { ... forward ... }`, scoped
// to the zone. CoreDNS answers the zone from them and forwards the rest; doctor passes.
func TestDoctorPassesOnTheZoneServedFromTheDotBlock(t *testing.T) {
	lab.LanDNSVariant(t, "dot-block")
	s := discoveredCorefile(t)
	require.Len(t, s.Corefile.Blocks, 1, "only the `.` block is left")

	r := doctor(t, "--only", "LA104,LA301,LA302,LA303", "--no-helpers")
	for _, id := range []string{"LA104", "LA301", "LA302", "LA303"} {
		c := r.check(t, id)
		assert.Equal(t, "pass", c.Status, "%s: %+v", id, c.Findings)
	}
	assertCoreDNSAsPredicted(t, s.Corefile, serviceTargetPort(t, s))
}

// k3s's pattern: the zone block comes from coredns-custom's lan.server through
// `import /etc/coredns/custom/*.server`. Doctor reads the import from the pods' volumes and
// passes; CoreDNS answers as it predicts.
func TestDoctorReadsTheZoneBlockOfAnImportedConfigMap(t *testing.T) {
	lab.LanDNSVariant(t, "import")
	s := discoveredCorefile(t)
	zone := s.Corefile.BlocksServing("apps.example.com.", "1053")
	require.Len(t, zone, 1)
	assert.Equal(t, "/etc/coredns/custom/lan.server", zone[0].File, "the zone block is the imported one")

	r := doctor(t, "--only", "LA104,LA301,LA302,LA303", "--no-helpers")
	for _, id := range []string{"LA104", "LA301", "LA302", "LA303"} {
		c := r.check(t, id)
		assert.Equal(t, "pass", c.Status, "%s: %+v", id, c.Findings)
	}
	assert.True(t, r.check(t, "LA104").mentions("info", "coredns-custom"), "LA104 says where the zone block comes from")
	assertCoreDNSAsPredicted(t, s.Corefile, serviceTargetPort(t, s))
}

// The zone block in the Corefile beside the import that already brings it: CoreDNS refuses
// the configuration (the running pods keep their last one; a pod that starts now crashes with
// "already defined"). doctor fails LA104-ZONE-DEFINED-TWICE with a fix that removes the
// Corefile's copy; pasted as printed, the new pod starts and doctor passes.
func TestDoctorFailsLA104WhenTheImportedZoneIsAlsoInTheCorefile(t *testing.T) {
	lab.LanDNSVariant(t, "import-twice")

	r := doctor(t, "--only", "LA104", "--no-helpers")
	c := r.check(t, "LA104")
	require.Equal(t, "fail", c.Status, "%+v", c.Findings)
	var fix string
	for _, f := range c.Findings {
		if f.Code == "LA104-ZONE-DEFINED-TWICE" {
			fix = f.Remediation
			assert.Contains(t, f.Message, "coredns-custom", "both places are named")
		}
	}
	require.NotEmpty(t, fix, "LA104-ZONE-DEFINED-TWICE with a fix: %+v", c.Findings)
	assert.Contains(t, fix, "configmap lan-dns", "the fix edits the Corefile's ConfigMap")
	assert.NotContains(t, fix, "coredns-custom -", "the imported block is kept")

	// The real CoreDNS: the running pods log the refused reload; a new pod does not start.
	pods := runningPods(t, "traefik", "app=lan-dns")
	eventually(t, 30*time.Second, func() error {
		if log, err := lab.ContainerLog("traefik", pods[0].Name, "coredns"); err != nil || !strings.Contains(log, "already defined") {
			return errorf("no refused reload in the log of %s yet (%v)", pods[0].Name, err)
		}
		return nil
	})
	ctx := context.Background()
	require.NoError(t, lab.Client.CoreV1().Pods("traefik").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}))
	var fresh string
	eventually(t, 60*time.Second, func() error {
		list, err := lab.Client.CoreV1().Pods("traefik").List(ctx, metav1.ListOptions{LabelSelector: "app=lan-dns"})
		if err != nil {
			return err
		}
		for _, p := range list.Items {
			if p.Name == pods[0].Name || p.Name == pods[len(pods)-1].Name || p.Status.PodIP == "" {
				continue
			}
			fresh = p.Name
			if log, err := lab.ContainerLog("traefik", p.Name, "coredns"); err != nil || !strings.Contains(log, "already defined") {
				return errorf("the new pod %s has not logged the refusal yet (%v)", p.Name, err)
			}
			return nil
		}
		return errorf("no replacement pod yet")
	})
	t.Logf("the replacement %s does not start: CoreDNS refuses the Corefile", fresh)

	pasteKubectl(t, fix)
	eventually(t, 90*time.Second, func() error {
		d, err := lab.Client.AppsV1().Deployments("traefik").Get(ctx, "lan-dns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas < 2 {
			return errorf("lan-dns has %d available replicas after the fix", d.Status.AvailableReplicas)
		}
		return nil
	})
	lab.WaitProxySynced(t)
	r = doctor(t, "--only", "LA104,LA301,LA302", "--no-helpers")
	for _, id := range []string{"LA104", "LA301", "LA302"} {
		c := r.check(t, id)
		assert.Equal(t, "pass", c.Status, "%s after the fix: %+v", id, c.Findings)
	}
	s := discoveredCorefile(t)
	assert.Len(t, s.Corefile.BlocksServing("apps.example.com.", "1053"), 1, "one zone block is left")
	assertCoreDNSAsPredicted(t, s.Corefile, serviceTargetPort(t, s))
}
