package kube_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// The socket tables need the node's network namespace and nothing else (see HelperPod): the
// default helper runs as nobody with every capability dropped, and does not see the node's
// processes.
func TestTheDefaultHelperReadsSocketsAsNobodyWithNoCapability(t *testing.T) {
	p := kube.HelperPod(kube.HelperConfig{RunID: "r1"}, "lanaccess-r1-1-node-1", "node-1")
	assert.Equal(t, kube.DefaultHelperNamespace, p.Namespace)
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
	p := kube.HelperPod(kube.HelperConfig{RunID: "r1"}, "x", "node-1")
	assert.Equal(t, kube.DefaultHelperImage, p.Spec.Containers[0].Image)
	assert.Regexp(t, regexp.MustCompile(`^docker\.io/library/busybox:1\.36\.1@sha256:[0-9a-f]{64}$`), kube.DefaultHelperImage)
	assert.Regexp(t, regexp.MustCompile(`^sha256:[0-9a-f]{64}$`), kube.HelperImageDigest)
}

// Naming the owner of a socket reads /proc/PID/fd of every process on the node: hostPID, uid 0,
// CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, nothing more (no privileged, no other capability).
func TestTheOwnerReadingHelperAddsExactlyWhatTheKernelAsksFor(t *testing.T) {
	p := kube.HelperPod(kube.HelperConfig{RunID: "r1", NameOwners: true}, "x", "node-1")
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
