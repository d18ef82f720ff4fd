package kube_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// refuseOutside makes both fake clients answer like an identity that holds Roles only in
// namespaces: any list cluster-wide, of a cluster-scoped resource or in another namespace is
// refused (forbidden) and recorded.
func refuseOutside(cs *fake.Clientset, dc *dynamicfake.FakeDynamicClient, namespaces ...string) *[]string {
	var refused []string
	react := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if slices.Contains(namespaces, a.GetNamespace()) {
			return false, nil, nil
		}
		r := a.GetResource()
		refused = append(refused, r.Resource+"."+r.Group+" in "+a.GetNamespace())
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: r.Group, Resource: r.Resource}, "", errors.New("RBAC: namespace only"))
	}
	cs.PrependReactor("list", "*", react)
	dc.PrependReactor("list", "*", react)
	return &refused
}

// With -n (and the DNS Service named NAMESPACE/NAME), discovery makes no read outside those
// namespaces: not the cluster-wide Service list first, nor nodes, admission, kube-system.
// What it skipped is recorded as out of scope, not as forbidden.
func TestDiscoverWithANamespaceStaysInIt(t *testing.T) {
	cs, dc := cluster(t)
	refused := refuseOutside(cs, dc, "traefik", "lan-dns")
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{Namespace: "traefik", DNSService: "lan-dns/lan-dns"})
	require.NoError(t, err)
	assert.Empty(t, *refused, "no read left the namespaces given")
	assert.Equal(t, []string{"lan-dns", "traefik"}, s.Scope)
	assert.Equal(t, "traefik/traefik", s.ProxyService.Namespace+"/"+s.ProxyService.Name)
	assert.Equal(t, "lan-dns/lan-dns", s.DNSService.Namespace+"/"+s.DNSService.Name)
	require.NotNil(t, s.ConfigMap, "the Corefile is read in the DNS namespace")
	assert.Len(t, s.DNSPods, 2)
	assert.Len(t, s.EndpointSlices["traefik/traefik"], 1)
	skipped := s.Skipped()
	for _, k := range []string{"services", "nodes", "namespaces", "ingresses.networking.k8s.io", "ingressclasses.networking.k8s.io",
		"validatingwebhookconfigurations.admissionregistration.k8s.io", "daemonsets.apps", "pods in kube-system", "configmaps in kube-system"} {
		assert.Contains(t, skipped, k)
		assert.True(t, kube.IsOutOfScope(s.Unread(k)), k)
	}
	for k, err := range s.Partial {
		assert.False(t, apierrors.IsForbidden(err), "%s: %v", k, err)
	}
	assert.Contains(t, s.Unread("nodes").Error(), "namespaces lan-dns, traefik")
}

// Both Services named NAMESPACE/NAME leave nothing to search for: discovery stays in their
// namespaces without -n; -A reads the whole cluster whatever is named.
func TestDiscoverWithBothServicesNamedStaysInTheirNamespaces(t *testing.T) {
	cs, dc := cluster(t)
	refused := refuseOutside(cs, dc, "traefik", "lan-dns")
	sel := kube.Selection{ProxyService: "traefik/traefik", DNSService: "lan-dns/lan-dns"}
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, sel)
	require.NoError(t, err)
	assert.Empty(t, *refused)

	sel.AllNamespaces = true
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, sel)
	require.NoError(t, err)
	assert.Contains(t, *refused, "services. in ", "-A lists Services cluster-wide first")
	assert.True(t, apierrors.IsForbidden(s.Unread("services")))
	assert.Equal(t, []string{"lan-dns", "traefik"}, s.Scope, "refused, it stays in the named namespaces")
	assert.Len(t, *refused, 1, "and reads nothing else outside them")
}

// Without -n, an identity that may not list Services cluster-wide stays in the kubeconfig
// context's namespace (as kubectl does), and everything after stays there too.
func TestDiscoverFallsBackToTheKubeconfigNamespace(t *testing.T) {
	cs, dc := cluster(t)
	refused := refuseOutside(cs, dc, "traefik")
	_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{KubeconfigNamespace: "traefik"})
	u := usageError(t, err)
	assert.Contains(t, u.Message, "in namespace traefik", "the DNS Service is looked for in the kubeconfig's namespace")
	assert.Equal(t, []string{"services. in "}, *refused, "only the first, cluster-wide Service list was tried")
}

func TestSelectionScope(t *testing.T) {
	for _, tc := range []struct {
		sel  kube.Selection
		want []string
	}{
		{kube.Selection{}, nil},
		{kube.Selection{Namespace: "traefik"}, []string{"traefik"}},
		{kube.Selection{Namespace: "traefik", AllNamespaces: true}, nil},
		{kube.Selection{ProxyService: "traefik/traefik"}, nil},
		{kube.Selection{ProxyService: "traefik/traefik", DNSService: "dns"}, nil},
		{kube.Selection{ProxyService: "traefik/traefik", DNSService: "lan/dns", ConfigMap: "conf/cm"}, []string{"conf", "lan", "traefik"}},
		{kube.Selection{Namespace: "a", DNSService: "b/dns", KubeconfigNamespace: "c"}, []string{"a", "b"}},
	} {
		assert.Equal(t, tc.want, tc.sel.Scope(), "%+v", tc.sel)
	}
}

func TestReadKeysSplitBack(t *testing.T) {
	for _, k := range []string{kube.ReadKey("", "services", ""), kube.ReadKey("networking.k8s.io", "ingresses", "traefik"), kube.ReadKey("", "pods", "kube-system")} {
		g, r, ns := kube.SplitReadKey(k)
		assert.Equal(t, k, kube.ReadKey(g, r, ns))
	}
	assert.True(t, kube.ReadPerNamespace("traefik.io", "ingressroutes"))
	assert.True(t, kube.ReadPerNamespace("", "services"))
	assert.False(t, kube.ReadPerNamespace("", "nodes"))
	assert.False(t, kube.ReadPerNamespace("gateway.networking.k8s.io", "gatewayclasses"))
}
