package client

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The groups are registered on first use, not at start: a process that builds no client (a
// fresh test binary, as `version` would) has an empty scheme; the first use registers the seven
// groups and metav1's options.
func TestSchemeIsRegisteredOnFirstUse(t *testing.T) {
	if os.Getenv("CLIENT_SCHEME_FRESH") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSchemeIsRegisteredOnFirstUse$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CLIENT_SCHEME_FRESH=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return
	}
	require.Empty(t, scheme.AllKnownTypes(), "registered before first use")
	s := Scheme()
	assert.True(t, s.Recognizes(corev1.SchemeGroupVersion.WithKind("Pod")))
	// metav1's options, under the unversioned "v1" (the ParameterCodec's)
	assert.True(t, s.Recognizes(corev1.SchemeGroupVersion.WithKind("ListOptions")))
	assert.False(t, s.Recognizes(corev1.SchemeGroupVersion.WithKind("Nope")))
	groups := map[string]bool{}
	for gvk := range s.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal {
			groups[gvk.GroupVersion().String()] = true
		}
	}
	assert.Equal(t, map[string]bool{
		"v1": true, "admissionregistration.k8s.io/v1": true, "apps/v1": true, "authorization.k8s.io/v1": true,
		"discovery.k8s.io/v1": true, "networking.k8s.io/v1": true, "policy/v1": true,
	}, groups)
}
