package kube_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// Discovery reads side by side; what it returns must not depend on which answer came first.
// Each case runs several times: the reads are scheduled in a different order each time.
const concurrentRuns = 10

// Two reads the setup depends on fail: the error is the one reading them in order returns (the
// nodes are read before the PodDisruptionBudgets and the EndpointSlices).
func TestDiscoverReturnsTheFirstErrorInReadingOrder(t *testing.T) {
	for range concurrentRuns {
		cs, dc := cluster(t)
		fail := func(what string) clienttesting.ReactionFunc {
			return func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewInternalError(errors.New(what + " unavailable"))
			}
		}
		cs.PrependReactor("list", "poddisruptionbudgets", fail("poddisruptionbudgets"))
		cs.PrependReactor("list", "endpointslices", fail("endpointslices"))
		cs.PrependReactor("list", "nodes", fail("nodes"))
		_, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "list nodes: ")
	}
}

// Three steps record a refused read under the same key (pods in kube-system: the dataplane's
// kube-proxy pods, then the API server's pods): the reason kept is the last step's, as when
// they read one after the other.
func TestDiscoverKeepsTheLastReasonForAReadKeyInReadingOrder(t *testing.T) {
	for range concurrentRuns {
		cs, dc := cluster(t)
		cs.PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			l, ok := a.(clienttesting.ListActionImpl)
			if !ok || a.GetNamespace() != "kube-system" {
				return false, nil, nil
			}
			sel := l.GetListRestrictions().Labels.String()
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("refused for "+sel))
		})
		s, err := kube.Discover(context.Background(), clientgo.Wrap(cs), dc, kube.Selection{})
		require.NoError(t, err)
		got := s.Unread(kube.ReadKey("", "pods", "kube-system"))
		require.Error(t, got)
		assert.Contains(t, got.Error(), "refused for "+kube.APIServerSelector)
		assert.Contains(t, s.APIServer.Why, "refused for "+kube.APIServerSelector)
		assert.Contains(t, s.Dataplane.Unread[len(s.Dataplane.Unread)-1], "refused for "+kube.KubeProxySelector)
	}
}

// A dead context ends discovery with an error, whichever reads were under way.
func TestDiscoverWithADeadContextEndsWithItsError(t *testing.T) {
	cs, dc := cluster(t)
	ctx, cancel := context.WithCancel(t.Context())
	cs.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		cancel() // the context dies while the other reads are under way
		return true, nil, context.Canceled
	})
	_, err := kube.Discover(ctx, clientgo.Wrap(cs), dc, kube.Selection{})
	require.ErrorIs(t, err, context.Canceled)
}
