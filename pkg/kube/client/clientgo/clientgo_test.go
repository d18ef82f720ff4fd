package clientgo

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Through Wrap, the fake clientset's objects, reactors, recorded actions and discovery answer
// as they do without it.
func TestWrapKeepsTheFakeClientset(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	cs.PrependReactor("get", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "from-reactor"}}, nil
	})
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	c := Wrap(cs)
	ctx := context.Background()
	pods, err := c.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	node, err := c.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "from-reactor", node.Name)
	require.NoError(t, c.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}))
	v, err := c.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", v.GitVersion)
	actions := cs.Actions()
	verbs := make([]string, 0, len(actions))
	for _, a := range actions {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
	}
	assert.Equal(t, []string{"list pods", "get nodes", "delete pods", "get version"}, verbs)
	assert.Nil(t, Wrap(nil))
}
