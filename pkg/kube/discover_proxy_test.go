package kube_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// Discovery identifies ingress-nginx behind the Service on the node addresses and reads the
// ConfigMap its --configmap names, whose global-auth-url authenticates every Ingress.
func TestDiscoverReadsIngressNginxAndItsConfigMap(t *testing.T) {
	objs, err := fixture.Load("../../testdata/corpus/ingress-nginx-global-auth/objects.yaml")
	require.NoError(t, err)
	route := func(s *kube.Setup, ns, name string) proxyroute.Route {
		for _, r := range s.Routes {
			if r.Namespace == ns && r.Name == name {
				return r
			}
		}
		require.Failf(t, "no route", "%s/%s", ns, name)
		return proxyroute.Route{}
	}

	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
	s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{AllNamespaces: true})
	require.NoError(t, err)
	assert.Equal(t, proxyroute.ImplIngressNginx, s.Implementation.Name)
	assert.Equal(t, "v1.15.1", s.Implementation.Version)
	assert.Contains(t, s.Implementation.IdentifiedBy, "registry.k8s.io/ingress-nginx/controller:v1.15.1")
	require.Len(t, s.ProxyConfigMaps, 1)
	assert.Contains(t, route(s, "wiki", "wiki").Authentication(), "global-auth-url http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth")
	assert.Equal(t, "grafana.apps.example.com", s.ProbeHost.Name)

	t.Run("the ConfigMap cannot be read", func(t *testing.T) {
		cs, dc, err := fixture.Clients(objs)
		require.NoError(t, err)
		fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
		cs.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "ingress-nginx" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC: access denied"))
		})
		s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{AllNamespaces: true})
		require.NoError(t, err)
		assert.Error(t, s.Unread(kube.ReadKey("", "configmaps", "ingress-nginx")))
		wiki := route(s, "wiki", "wiki")
		assert.Empty(t, wiki.Authentication())
		assert.Contains(t, wiki.AuthUnsure, "could not be read", "unknown is never a pass")
	})
}
