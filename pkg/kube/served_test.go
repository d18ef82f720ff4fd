package kube

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func servedFixture(t *testing.T, groupVersions ...string) (*fakediscovery.FakeDiscovery, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	for _, gv := range groupVersions {
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: gv})
	}
	lists := map[schema.GroupVersionResource]string{}
	for _, r := range TraefikIngressRoutes() {
		lists[r.GVR] = r.ListKind()
	}
	return disc, dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists)
}

// A group/version the server does not serve is "not installed" without a request; one it
// serves is asked; the served set is asked once.
func TestAnUnservedGroupVersionIsNotAskedFor(t *testing.T) {
	disc, dyn := servedFixture(t, "traefik.io/v1alpha1")
	s := ServedOnly(APIGroups(disc), dyn)
	io, containo := TraefikIngressRoutes()[0], TraefikIngressRoutes()[1]
	_, err := s.Resource(containo.GVR).List(t.Context(), metav1.ListOptions{})
	require.Error(t, err)
	assert.True(t, IsNotInstalled(err), err)
	_, err = s.Resource(containo.GVR).Namespace("traefik").List(t.Context(), metav1.ListOptions{})
	assert.True(t, IsNotInstalled(err), err)
	assert.Empty(t, dyn.Actions(), "nothing was asked of the server")
	_, err = s.Resource(io.GVR).Namespace("traefik").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, dyn.Actions(), 1)
	served := 0
	for _, a := range disc.Actions() {
		if a.GetResource().Resource == "group" || a.GetVerb() == "get" {
			served++
		}
	}
	assert.LessOrEqual(t, served, 1, "the served group/versions are asked once")
}

// When the served set cannot be read, every read goes to the server.
func TestUnknownServedGroupsAskTheServer(t *testing.T) {
	disc, dyn := servedFixture(t)
	disc.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("discovery failed")
	})
	s := ServedOnly(APIGroups(disc), dyn)
	_, err := s.Resource(TraefikIngressRoutes()[1].GVR).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, dyn.Actions(), 1)
}

// What discovery did not read and the cluster does not serve is known not installed.
func TestServedKnownTellsAnUnservedGroupVersion(t *testing.T) {
	disc, dyn := servedFixture(t, "traefik.io/v1alpha1")
	s := ServedOnly(APIGroups(disc), dyn)
	served, known := servedKnown(s, CalicoInstallations().GVR.GroupVersion())
	assert.True(t, known)
	assert.False(t, served)
	served, known = servedKnown(s, TraefikIngressRoutes()[0].GVR.GroupVersion())
	assert.True(t, known && served)
	_, known = servedKnown(dyn, CalicoInstallations().GVR.GroupVersion())
	assert.False(t, known, "a plain dynamic client knows nothing")
}
