package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

func TestAddressConsistencyBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la101-")
}

func TestAddressConsistencyShowsTheThreeWayDiff(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(s *corev1.Service) {
		s.Spec.ExternalIPs = []string{"10.0.10.11", "10.0.10.12"}
	}))
	st, o := runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusFail, st)
	f := configFindings(o, engine.SeverityFail, "Service lan-dns/lan-dns")
	require.Len(t, f, 1)
	assert.Equal(t, []string{
		"10.0.10.11: proxy yes, dns yes, zone yes",
		"10.0.10.12: proxy yes, dns yes, zone yes",
		"10.0.10.13: proxy yes, dns no, zone yes",
	}, f[0].Evidence["diff"])
	assert.Contains(t, f[0].Message, "lack 10.0.10.13")
	assert.Equal(t, "LA101-DNS-MISSING", f[0].Code)
	assert.Equal(t, `kubectl -n lan-dns patch service lan-dns --type=merge -p '{"spec":{"externalIPs":["10.0.10.11","10.0.10.12","10.0.10.13"]}}'`, f[0].Remediation)
}

func TestAddressConsistencyTakesTheProxyAsReferenceWhenAllThreeDiffer(t *testing.T) {
	env := configEnv(t, nil, chain(
		editObject("lan-dns", "lan-dns", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"10.0.10.11"} }),
		editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
			cm.Data["Corefile"] = "apps.example.com:1053 {\n reload\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.12\"\n }\n template ANY ANY {\n  rcode NOERROR\n }\n}\n.:1053 {\n reload\n forward . /etc/resolv.conf\n}\n"
		}),
	))
	_, o := runConfigCheck(t, AddressConsistency(env))
	assert.Empty(t, configFindings(o, engine.SeverityFail, "Service traefik/traefik"))
	assert.Len(t, configFindings(o, engine.SeverityFail, "Service lan-dns/lan-dns"), 1)
	assert.Len(t, configFindings(o, engine.SeverityFail, "ConfigMap lan-dns/lan-dns (zone apps.example.com.)"), 1)
}

func TestAddressConsistencyReadsNonCanonicalForms(t *testing.T) {
	tests := []struct {
		ip      string
		sev     engine.Severity
		message string
	}{
		{"::ffff:10.0.10.11", engine.SeverityWarn, "IPv4-mapped IPv6 form: write 10.0.10.11"},
		{"010.0.10.11", engine.SeverityWarn, "inet_aton-based tools read the octets as octal"},
		{"127.0.0.1", engine.SeverityFail, "not a unicast address a node can carry"},
		{"node-1", engine.SeverityFail, "not an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			env := configEnv(t, nil, editObject("traefik", "traefik", func(s *corev1.Service) {
				s.Spec.ExternalIPs[0] = tt.ip
			}))
			_, o := runConfigCheck(t, AddressConsistency(env))
			f := configFindings(o, tt.sev, "Service traefik/traefik")
			require.NotEmpty(t, f, "%+v", o.Findings)
			assert.Contains(t, f[0].Message, `spec.externalIPs[0] "`+tt.ip+`"`)
			assert.Contains(t, f[0].Message, tt.message)
			assert.Equal(t, "spec.externalIPs[0]", f[0].Evidence["field"])
		})
	}
}

func TestAddressConsistencyAnAddressOfTwoNodesFails(t *testing.T) {
	env := configEnv(t, nil, editObject("", "node-2", func(n *corev1.Node) {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.10.13"})
	}))
	_, o := runConfigCheck(t, AddressConsistency(env))
	f := configFindings(o, engine.SeverityFail, "10.0.10.13")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "InternalIP of 2 nodes (node-2, node-3)")
}

func TestAddressConsistencyIsSkippedWhenNodesCannotBeRead(t *testing.T) {
	env := configEnv(t, nil, nil)
	env.Setup.Partial["nodes"] = apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("RBAC"))
	st, o := runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, o.Skip, "could not read nodes")

	// A problem found without the nodes is still reported, not hidden by the skip.
	env.Setup.DNSService.Spec.ExternalIPs = []string{"10.0.10.11"}
	st, _ = runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusFail, st)
}

func TestAddressConsistencyDoesNotJudgeAnswersThatDependOnTheQuery(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
		cm.Data["Corefile"] = "apps.example.com:1053 {\n reload\n template IN A {\n  answer \"{{ .Name }} 60 IN A {{ .Remote }}\"\n }\n template ANY ANY {\n }\n}\n.:1053 {\n reload\n forward . /etc/resolv.conf\n}\n"
	}))
	st, o := runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, o.Skip, "zone's answers are not known")
}

// corpusEnv discovers one case of the corpus (testdata/corpus).
func corpusEnv(t *testing.T, name string, variants ...string) *Env {
	t.Helper()
	paths := make([]string, 0, 1+len(variants))
	paths = append(paths, filepath.Join("..", "..", "testdata", "corpus", name, "objects.yaml"))
	for _, v := range variants {
		paths = append(paths, filepath.Join("..", "..", "testdata", "corpus", name, "variants", v+".yaml"))
	}
	objs, err := fixture.Load(paths...)
	require.NoError(t, err)
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
	setup, err := kube.Discover(t.Context(), clientgo.Wrap(cs), dc, kube.Selection{AllNamespaces: true})
	require.NoError(t, err)
	return &Env{Setup: setup, Access: kube.NewAccessReviewer(clientgo.Wrap(cs)), HelperNamespace: "default"}
}

func TestAddressConsistencyComparesAWithIPv4AndAAAAWithIPv6(t *testing.T) {
	tests := []struct {
		corpus string
		status engine.Status
		code   string
	}{
		{"dual-stack-a-and-aaaa", engine.StatusPass, ""},
		{"dual-stack-aaaa-not-on-services", engine.StatusFail, "LA101-ZONE-EXTRA"},
		{"dual-stack-services-v6-zone-nodata", engine.StatusWarn, "LA101-IPV6-UNANSWERED"},
		{"dual-stack-ipv6-in-a-template", engine.StatusFail, "LA101-ZONE-ANSWER-INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.corpus, func(t *testing.T) {
			st, o := runConfigCheck(t, AddressConsistency(corpusEnv(t, tt.corpus)))
			assert.Equal(t, tt.status, st, "%+v", o.Findings)
			if tt.code == "" {
				return
			}
			var codes []string
			for _, f := range o.Findings {
				codes = append(codes, f.Code)
				assert.NotContains(t, f.Remediation, "IN A fd00", "never an IPv6 address in an IN A answer")
			}
			assert.Contains(t, codes, tt.code)
		})
	}
}

func TestAddressConsistencyFixOfOneFamilyKeepsTheOther(t *testing.T) {
	env := corpusEnv(t, "dual-stack-a-and-aaaa")
	env.Setup.DNSService.Spec.ExternalIPs = []string{"10.0.10.11", "10.0.10.12", "fd00:10::11", "fd00:10::12", "fd00:10::13"}
	_, o := runConfigCheck(t, AddressConsistency(env))
	f := configFindings(o, engine.SeverityFail, "Service lan-dns/lan-dns")
	require.Len(t, f, 1, "%+v", o.Findings)
	assert.Contains(t, f[0].Remediation, `"externalIPs":["10.0.10.11","10.0.10.12","10.0.10.13","fd00:10::11","fd00:10::12","fd00:10::13"]`)
}

func TestAddressConsistencyNamesTheValuesKeyOfAnOwnedService(t *testing.T) {
	_, o := runConfigCheck(t, AddressConsistency(corpusEnv(t, "coredns-chart-helm-owned-dns-lacks-address")))
	fixes := make([]string, 0, len(o.Findings))
	for _, f := range o.Findings {
		fixes = append(fixes, f.Remediation)
	}
	assert.Contains(t, strings.Join(fixes, "\n"), "values key service.externalIPs")
	assert.Contains(t, strings.Join(fixes, "\n"), "the next helm upgrade sets a direct change back")
}

// singleStack is a corpus case whose two Services are single-stack IPv4, as the API server allocates it in a cluster
// whose service CIDRs are IPv4 only: its IPv6 externalIPs are accepted and captured by no
// kube-proxy (pkg/proxy/serviceport.go keeps the externalIPs of the proxier's family only).
func singleStack(t *testing.T, corpus string) *Env {
	t.Helper()
	env := corpusEnv(t, corpus)
	for _, svc := range []*corev1.Service{env.Setup.ProxyService, env.Setup.DNSService} {
		policy := corev1.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &policy
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	return env
}

func TestAddressConsistencyFailsIPv6AddressesNoKubeProxyCaptures(t *testing.T) {
	st, o := runConfigCheck(t, AddressConsistency(singleStack(t, "dual-stack-a-and-aaaa")))
	assert.Equal(t, engine.StatusFail, st, "%+v", o.Findings)
	var lost []engine.Finding
	for _, f := range o.Findings {
		if f.Code == "LA101-FAMILY-NOT-CAPTURED" {
			lost = append(lost, f)
		}
	}
	require.Len(t, lost, 2, "one per Service: %+v", o.Findings)
	for _, f := range lost {
		assert.Equal(t, engine.SeverityFail, f.Severity, "the zone answers AAAA with them")
		assert.Contains(t, f.Message, "fd00:10::11, fd00:10::12, fd00:10::13")
		assert.Contains(t, f.Remediation, `"externalIPs":["10.0.10.11","10.0.10.12","10.0.10.13"]`, "the fix keeps the captured family only")
		assert.NotContains(t, f.Remediation, "IN AAAA fd00")
	}

	// A dual-stack Service of a dual-stack cluster (ClusterIPs of both families) is captured.
	env := corpusEnv(t, "dual-stack-a-and-aaaa")
	require.Len(t, env.Setup.DNSService.Spec.ClusterIPs, 2, "the corpus case is dual-stack")
	st, o = runConfigCheck(t, AddressConsistency(env))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
}

func TestAddressConsistencyNeverSuggestsAAAAForAddressesNoKubeProxyCaptures(t *testing.T) {
	st, o := runConfigCheck(t, AddressConsistency(singleStack(t, "dual-stack-services-v6-zone-nodata")))
	assert.Equal(t, engine.StatusWarn, st, "NODATA keeps IPv6 clients on IPv4: nothing breaks: %+v", o.Findings)
	codes := make([]string, 0, len(o.Findings))
	for _, f := range o.Findings {
		codes = append(codes, f.Code)
		assert.NotContains(t, f.Remediation, "IN AAAA", "%s: answering AAAA would send IPv6 clients where nothing is captured", f.Code)
	}
	assert.Contains(t, codes, "LA101-FAMILY-NOT-CAPTURED")
	assert.Contains(t, codes, "LA101-IPV6-UNANSWERED")
}
