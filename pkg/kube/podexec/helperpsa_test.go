package podexec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// forbidden is what Pod Security admission's own checks (k8s.io/pod-security-admission, the
// code the API server runs) refuse in pod at level, as "reason: detail".
func forbidden(t *testing.T, level api.Level, pod *corev1.Pod) []string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	require.NoError(t, err)
	var out []string
	for _, r := range ev.EvaluatePod(api.LevelVersion{Level: level, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

// Which field needs which Pod Security level: the socket reader needs privileged for
// hostNetwork alone (a baseline check); everything else in it is restricted-clean. The
// owner-naming reader adds hostPID and two capabilities outside the baseline set, and runs as
// root. So the helper namespace enforces privileged, the least level that admits it, and its
// admission policy does the narrowing.
func TestPodSecurityRefusesTheHelperBelowPrivilegedForHostNetworkOnly(t *testing.T) {
	sockets := podexec.HelperPod(podexec.HelperConfig{RunID: "r1"}, "x", "node-1")
	assert.Empty(t, forbidden(t, api.LevelPrivileged, sockets))
	assert.Equal(t, []string{"host namespaces: hostNetwork=true"}, forbidden(t, api.LevelBaseline, sockets))
	assert.Equal(t, []string{"host namespaces: hostNetwork=true"}, forbidden(t, api.LevelRestricted, sockets),
		"non-root, no capability, no escalation, seccomp: nothing else restricted refuses")

	owners := podexec.HelperPod(podexec.HelperConfig{RunID: "r1", NameOwners: true}, "x", "node-1")
	assert.ElementsMatch(t, []string{
		"host namespaces: hostNetwork=true, hostPID=true",
		`non-default capabilities: container "reader" must not include "DAC_READ_SEARCH", "SYS_PTRACE" in securityContext.capabilities.add`,
	}, forbidden(t, api.LevelBaseline, owners))
	assert.Contains(t, forbidden(t, api.LevelRestricted, owners), `runAsNonRoot != true: container "reader" must not set securityContext.runAsNonRoot=false`)
}
