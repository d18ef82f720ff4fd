package podexec_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// The socket tables need the node's network namespace and nothing else (see HelperPod): the
// default helper runs as nobody with every capability dropped, and does not see the node's
// processes.
func TestTheDefaultHelperReadsSocketsAsNobodyWithNoCapability(t *testing.T) {
	p := podexec.HelperPod(podexec.HelperConfig{RunID: "r1"}, "lanaccess-r1-1-node-1", "node-1")
	assert.Equal(t, podexec.DefaultHelperNamespace, p.Namespace)
	assert.True(t, p.Spec.HostNetwork)
	assert.False(t, p.Spec.HostPID, "no view of the node's processes")
	assert.False(t, p.Spec.HostIPC)
	assert.Empty(t, p.Spec.Volumes)
	assert.False(t, *p.Spec.AutomountServiceAccountToken)
	require.Len(t, p.Spec.Containers, 1)
	c := p.Spec.Containers[0]
	assert.Empty(t, c.Ports, "a hostNetwork port would hold a node port")
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.RunAsNonRoot)
	assert.Equal(t, int64(65534), *sc.RunAsUser)
	assert.Equal(t, int64(65534), *sc.RunAsGroup)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.False(t, *sc.Privileged)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
}

func TestTheHelperImageIsPinnedByDigest(t *testing.T) {
	p := podexec.HelperPod(podexec.HelperConfig{RunID: "r1"}, "x", "node-1")
	assert.Equal(t, podexec.DefaultHelperImage, p.Spec.Containers[0].Image)
	assert.Regexp(t, regexp.MustCompile(`^docker\.io/library/busybox:1\.36\.1@sha256:[0-9a-f]{64}$`), podexec.DefaultHelperImage)
	assert.Regexp(t, regexp.MustCompile(`^sha256:[0-9a-f]{64}$`), podexec.HelperImageDigest)
}

// Naming the owner of a socket reads /proc/PID/fd of every process on the node: hostPID, uid 0,
// CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, nothing more (no privileged, no other capability).
func TestTheOwnerReadingHelperAddsExactlyWhatTheKernelAsksFor(t *testing.T) {
	p := podexec.HelperPod(podexec.HelperConfig{RunID: "r1", NameOwners: true}, "x", "node-1")
	assert.True(t, p.Spec.HostNetwork)
	assert.True(t, p.Spec.HostPID)
	sc := p.Spec.Containers[0].SecurityContext
	assert.Equal(t, int64(0), *sc.RunAsUser)
	assert.False(t, *sc.RunAsNonRoot)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.ElementsMatch(t, []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}, sc.Capabilities.Add)
	assert.False(t, *sc.Privileged)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
}

// A deletion that fails is never silent: the shell's Close names the pod and the cleanup
// command of this run, and the run's Close tries again by name.
func TestAFailedDeletionNamesThePodAndTheCleanupCommand(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, running)
	failing := true
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
		}
		return false, nil, nil
	})
	ex := (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), ex, fastConfig())
	sh, err := shells.Open(context.Background(), readyNode("node-1"))
	require.NoError(t, err)

	err = sh.Close()
	var left *podexec.LeftPodsError
	require.ErrorAs(t, err, &left)
	assert.Equal(t, []podexec.PodRef{sh.Pod}, left.Pods)
	assert.Contains(t, err.Error(), "lanaccess/"+sh.Pod.Name)
	assert.Contains(t, err.Error(), "kubectl lanaccess cleanup -n lanaccess --run-id r1")
	assert.Contains(t, err.Error(), "etcdserver: request timed out")

	err = shells.Close()
	require.ErrorAs(t, err, &left)
	assert.Equal(t, []podexec.PodRef{sh.Pod}, left.Pods, "still there at the end of the run")

	failing = false
	require.NoError(t, shells.Close())
	assert.Empty(t, ourPods(t, cs))
}

// The run's Close deletes what it created by name, so a failing list does not leave them.
func TestCloseDeletesTheRunsPodsByNameWhenListingFails(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, running)
	ex := (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), ex, fastConfig())
	_, err := shells.Open(context.Background(), readyNode("node-1"))
	require.NoError(t, err)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("apiserver shutting down")
	})
	err = shells.Close()
	var left *podexec.LeftPodsError
	require.ErrorAs(t, err, &left, "the list failure is said")
	assert.Empty(t, left.Pods)
	assert.Contains(t, err.Error(), "kubectl lanaccess cleanup -n lanaccess --run-id r1")
	cs.ReactionChain = cs.ReactionChain[1:]
	assert.Empty(t, ourPods(t, cs), "deleted by name all the same")
}

func TestNoHelperIsMadeOnceTheRunIsClosed(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, running)
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{}), fastConfig())
	require.NoError(t, shells.Close())
	_, err := shells.Open(context.Background(), readyNode("node-1"))
	require.Error(t, err)
	assert.Empty(t, ourPods(t, cs))
}
