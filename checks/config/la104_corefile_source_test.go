package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// The zone's acl is judged against the source CoreDNS really sees: with externalTrafficPolicy
// Cluster, kube-proxy's masquerade address (the corpus case acl-lan-subnet-only, whose
// coredns.yaml holds the real CoreDNS's REFUSED from the pod bridge and overlay addresses);
// with Local, the workstation's own. The same for a view (view-split-horizon-lan-subnet). An acl that lets every masquerade address through is
// information, never a failure.
func TestLA104JudgesAnACLOrViewAgainstTheSourceCoreDNSSees(t *testing.T) {
	for _, tc := range []struct {
		name   string
		corpus string
		policy corev1.ServiceExternalTrafficPolicy
		acl    string
		code   string
	}{
		{"Cluster: the LAN-only acl refuses the pod network", "acl-lan-subnet-only", corev1.ServiceExternalTrafficPolicyCluster, "", "LA104-MASQUERADED-SOURCE"},
		{"Local: the acl sees the workstation", "acl-lan-subnet-only", corev1.ServiceExternalTrafficPolicyLocal, "", "LA104-BY-SOURCE"},
		{"Cluster: an acl that lets the pod network through", "acl-lan-subnet-only", corev1.ServiceExternalTrafficPolicyCluster, "allow net 10.0.10.0/24 10.244.0.0/16", "LA104-BY-SOURCE"},
		{"Cluster: an acl that drops the pod network", "acl-lan-subnet-only", corev1.ServiceExternalTrafficPolicyCluster, "drop net 10.244.0.0/16", "LA104-MASQUERADED-SOURCE"},
		{"Cluster: the pod network misses the LAN view and is forwarded", "view-split-horizon-lan-subnet", corev1.ServiceExternalTrafficPolicyCluster, "", "LA104-MASQUERADED-SOURCE"},
		{"Local: the view sees the workstation", "view-split-horizon-lan-subnet", corev1.ServiceExternalTrafficPolicyLocal, "", "LA104-BY-SOURCE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := corpusObjects(t, tc.corpus)
			edited := 0
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.Service:
					if o.Namespace == "lan-dns" && o.Name == "lan-dns" {
						o.Spec.ExternalTrafficPolicy = tc.policy
						edited++
					}
				case *corev1.ConfigMap:
					if tc.acl != "" && o.Namespace == "lan-dns" && o.Name == "lan-dns" {
						o.Data["Corefile"] = replaceOnce(t, o.Data["Corefile"], "allow net 10.0.10.0/24", tc.acl)
						edited++
					}
				}
			}
			require.Equal(t, 1+min(len(tc.acl), 1), edited)
			c := newCluster(t, objs)
			_, o := runConfigCheck(t, CorefileConfig(c.env(t, kube.Selection{AllNamespaces: true})))
			var codes []string
			for _, f := range o.Findings {
				if f.Code == "LA104-BY-SOURCE" || f.Code == "LA104-MASQUERADED-SOURCE" {
					codes = append(codes, f.Code)
				}
			}
			assert.Equal(t, []string{tc.code}, codes, "%+v", o.Findings)
		})
	}
}

// replaceOnce replaces the only occurrence of old in s.
func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(s, old), "%q in %q", old, s)
	return strings.Replace(s, old, repl, 1)
}

// Without the nodes, the masquerade's addresses are unknown: a warning naming what was not
// read, never the information that the acl lets every source through.
func TestLA104SourceJudgementWithoutNodesIsAWarning(t *testing.T) {
	var objs []runtime.Object
	for _, o := range corpusObjects(t, "acl-lan-subnet-only") {
		if _, node := o.(*corev1.Node); !node {
			objs = append(objs, o)
		}
	}
	c := newCluster(t, objs)
	_, o := runConfigCheck(t, CorefileConfig(c.env(t, kube.Selection{AllNamespaces: true})))
	var codes []string
	for _, f := range o.Findings {
		if strings.Contains(f.Code, "SOURCE") {
			codes = append(codes, f.Code)
		}
	}
	assert.Equal(t, []string{"LA104-SOURCE-UNKNOWN"}, codes, "%+v", o.Findings)
}

// The sources asked are bounded (maxSourceAddresses of the Service's addresses): past the bound,
// an acl that let every asked source through is a warning that says what was not asked.
func TestLA104SourceJudgementIsBounded(t *testing.T) {
	objs := corpusObjects(t, "acl-lan-subnet-only")
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			if o.Namespace == "lan-dns" && o.Name == "lan-dns" {
				for i := range maxSourceAddresses {
					o.Spec.ExternalIPs = append(o.Spec.ExternalIPs, fmt.Sprintf("192.0.2.%d", i+1))
				}
			}
		case *corev1.ConfigMap:
			if o.Namespace == "lan-dns" && o.Name == "lan-dns" {
				o.Data["Corefile"] = replaceOnce(t, o.Data["Corefile"], "allow net 10.0.10.0/24", "allow net 10.0.10.0/24 10.244.0.0/16")
			}
		}
	}
	c := newCluster(t, objs)
	_, o := runConfigCheck(t, CorefileConfig(c.env(t, kube.Selection{AllNamespaces: true})))
	var got []engine.Finding
	for _, f := range o.Findings {
		if strings.Contains(f.Code, "SOURCE") {
			got = append(got, f)
		}
	}
	require.Len(t, got, 1, "%+v", o.Findings)
	assert.Equal(t, "LA104-SOURCE-UNKNOWN", got[0].Code)
	assert.Contains(t, got[0].Message, "the others were not asked")
}
