package podexec_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// The helper namespace is Pod Security privileged; its admission policy is all that keeps the
// pod-creating grant to the helper's shape. rbac-helpers fails open on an API server without
// ValidatingAdmissionPolicy v1 (kubectl apply goes on past the refused policy), so doctor
// itself creates no helper pod unless the policy and a binding denying in the helper namespace
// are in place (issue 23).
func TestNoHelperPodWithoutTheHelperNamespacesPolicy(t *testing.T) {
	forbidden := func(cs *fake.Clientset) {
		cs.PrependReactor("get", "validatingadmissionpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, "x", errors.New("no"))
		})
	}
	for _, tc := range []struct {
		name  string
		objs  []runtime.Object
		react func(*fake.Clientset)
		want  string
	}{
		{"no policy", nil, nil, "ValidatingAdmissionPolicy kubectl-lanaccess-helper-pods does not exist"},
		{"a policy without its binding", kubetest.HelperPolicy("")[:1], nil, "ValidatingAdmissionPolicyBinding kubectl-lanaccess-helper-pods does not exist"},
		{"a binding for another namespace", kubetest.HelperPolicy("elsewhere"), nil, "does not deny in namespace lanaccess"},
		{"a policy that cannot be read", kubetest.HelperPolicy(""), forbidden, "could not be read (not permitted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objs...)
			if tc.react != nil {
				tc.react(cs)
			}
			shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
			_, err := shells.Open(context.Background(), readyNode("node-2"))
			require.Error(t, err)
			var he *podexec.HelperError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, podexec.CauseNoPolicy, he.Cause)
			assert.True(t, he.NotPermitted(), "a SKIP naming the reason, not a failure")
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, ourPods(t, cs), "no helper pod was created")
		})
	}
	cs := fake.NewClientset(kubetest.HelperPolicy("lanaccess")...)
	kubeletStarts(cs, running)
	ex := (&kubetest.FakeExecutor{}).On("", "cat /proc/net/tcp", kubetest.Reply{Stdout: "ok"})
	sh, err := podexec.NewNodeShells(clientgo.Wrap(cs), ex, fastConfig()).Open(context.Background(), readyNode("node-2"))
	require.NoError(t, err, "the bundle's policy, bound in the helper namespace")
	require.NoError(t, sh.Close())
}
