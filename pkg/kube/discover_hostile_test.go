package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// A tenant's objects built to make discovery work: 300 Middlewares whose chains name 200 others
// each (self-references and cycles included) and 500 IngressRoutes naming them. Before the
// middleware memo one such chain took 7-12 s and Discover overran a 1 s deadline by 3 s with no
// error (issue 23); now the whole set is read well within a deadline of a few seconds, and a
// deadline that has passed is an error, never a silent overrun.
func TestDiscoverStaysWithinItsDeadlineOnHostileMiddlewareChains(t *testing.T) {
	const n = 300
	objs := make([]runtime.Object, 0, n+500)
	for i := range n {
		members := make([]any, 200)
		for j := range members {
			members[j] = map[string]any{"name": fmt.Sprintf("mw-%d", (i+j)%n)}
		}
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
			"metadata": map[string]any{"namespace": "tenant", "name": fmt.Sprintf("mw-%d", i)},
			"spec":     map[string]any{"chain": map[string]any{"middlewares": members}},
		}})
	}
	for i := range 500 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
			"metadata": map[string]any{"namespace": "tenant", "name": fmt.Sprintf("r-%d", i)},
			"spec": map[string]any{"routes": []any{map[string]any{
				"kind": "Rule", "match": fmt.Sprintf("Host(`r%d.apps.example.com`)", i),
				"middlewares": []any{map[string]any{"name": fmt.Sprintf("mw-%d", i%n)}},
				"services":    []any{map[string]any{"name": "svc", "port": int64(80)}},
			}}},
		}})
	}
	cs, dc := cluster(t, add(objs...))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s, err := kube.Discover(ctx, clientgo.Wrap(cs), dc, kube.Selection{})
	require.NoError(t, err, "discovery ends within its deadline on the hostile set")
	assert.GreaterOrEqual(t, len(s.Routes), 500)

	done, cancelNow := context.WithCancel(t.Context())
	cancelNow()
	_, err = kube.Discover(done, clientgo.Wrap(cs), dc, kube.Selection{})
	assert.Error(t, err, "an ended context is an error, not a silent overrun")
}
