package podruntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// A pod that maps hostPorts gets a namespace of its own on any node (the real portmap plugin
// DNATs the node's addresses to it); others share a shared node's namespace.
func TestPodsThatMapHostPortsGetANamespaceOfTheirOwn(t *testing.T) {
	shared, dedicated := layout.Node{}, layout.Node{Dedicated: true}
	plain := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 8443}}}}}}
	mapped := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 8443, HostPort: 443}}}}}}
	hostNet := mapped.DeepCopy()
	hostNet.Spec.HostNetwork = true
	assert.False(t, OwnNamespace(shared, plain))
	assert.True(t, OwnNamespace(shared, mapped))
	assert.False(t, OwnNamespace(shared, hostNet), "a hostNetwork pod binds the node's ports itself")
	assert.True(t, OwnNamespace(dedicated, plain))
	assert.True(t, OwnNamespace(dedicated, nil))
	assert.False(t, OwnNamespace(shared, nil))
}
