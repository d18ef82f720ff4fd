//go:build lab

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

const helperPolicy = "ValidatingAdmissionPolicy 'kubectl-lanaccess-helper-pods'"

// createPod asks the real API server to admit pod (a dry run: admission runs, nothing is stored).
func createPod(t *testing.T, pod *corev1.Pod) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := lab.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// waitHelperPolicy waits until the helper namespace's admission policy is in force: a new
// policy takes effect once the API server's admission has loaded it (about a second here).
func waitHelperPolicy(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		p := podexec.HelperPod(podexec.HelperConfig{RunID: "wait0001"}, "lanaccess-wait0001-1-node-1", "node-1")
		p.Labels = nil
		if err := createPod(t, p); err == nil || !strings.Contains(err.Error(), helperPolicy) {
			return fmt.Errorf("the helper policy is not in force yet: %v", err)
		}
		return nil
	})
}

func labelHelperNamespace(t *testing.T, value string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + podexec.HelperOwnersLabel + `":` + value + `}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := lab.Client.CoreV1().Namespaces().Patch(ctx, podexec.DefaultHelperNamespace, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// The helper namespace is Pod Security privileged (hostNetwork needs it), so its admission
// policy is what keeps anyone holding the helper grant to the helper's own pod shape. Every
// variant below is a real attempt at more than the helper needs; the API server refuses each,
// naming the policy, and admits the helper pod the plugin makes.
func TestTheHelperNamespaceAdmitsTheHelperPodOnly(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	helper := func() *corev1.Pod {
		return podexec.HelperPod(podexec.HelperConfig{RunID: "vap0test"}, "lanaccess-vap0test-1-node-1", "node-1")
	}
	require.NoError(t, createPod(t, helper()), "the helper pod is admitted")

	variants := map[string]func(p *corev1.Pod){
		"privileged": func(p *corev1.Pod) {
			// The API itself refuses privileged without privilege escalation.
			p.Spec.Containers[0].SecurityContext.Privileged = new(true)
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
		},
		"another image (the tag, not the digest)": func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "docker.io/library/busybox:1.36.1"
		},
		"another image by digest": func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32)
		},
		"a hostPath volume": func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
		},
		"the host PID namespace": func(p *corev1.Pod) { p.Spec.HostPID = true },
		"an added capability": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		},
		"root":                    func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To[int64](0) },
		"a service account token": func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil },
		"a host port": func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		},
		"a secret in the environment": func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}
		},
		"a second container": func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[0].DeepCopy())
			p.Spec.Containers[1].Name = "two"
		},
		"not our label": func(p *corev1.Pod) { p.Labels = map[string]string{"app": "miner"} },
		"no deadline":   func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
		// The pod's own work is pinned too (issue 23): the grant runs a helper, nothing else.
		"another command":       func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sh", "-c", "mine"} },
		"arguments":             func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"--all"} },
		"a sleep past the hour": func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sleep", "86400"} },
		"more memory": func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("8Gi")
		},
		"the scheduler places it": func(p *corev1.Pod) { p.Spec.NodeName = "" },
		"a node selector": func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		},
		"a toleration of its own": func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
		},
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			p := helper()
			change(p)
			err := createPod(t, p)
			require.Error(t, err, "admitted")
			assert.True(t, apierrors.IsForbidden(err), "403, the reason the policy gives: %v", err)
			assert.Contains(t, err.Error(), helperPolicy)
		})
	}

	// kubectl debug adds an ephemeral container to a running pod: refused too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := lab.Client.CoreV1().Pods(podexec.DefaultHelperNamespace).Create(ctx, helper(), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	eventually(t, 30*time.Second, func() error {
		// Read it again: the kubelet (kwok) updates its status meanwhile.
		cur, err := lab.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: podexec.DefaultHelperImage, Command: []string{"sh"}}}}
		_, err = lab.Client.CoreV1().Pods(p.Namespace).UpdateEphemeralContainers(ctx, p.Name, cur, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
			return err
		case err == nil:
			t.Fatal("kubectl debug into a helper was admitted")
		}
		assert.Contains(t, err.Error(), helperPolicy)
		return nil
	})

	// The owner-naming shape (node root) only where an administrator labelled the namespace.
	owners := podexec.HelperPod(podexec.HelperConfig{RunID: "vap0test", NameOwners: true}, "lanaccess-vap0test-2-node-1", "node-1")
	err = createPod(t, owners)
	require.Error(t, err)
	assert.Contains(t, err.Error(), helperPolicy)
	labelHelperNamespace(t, `"`+podexec.HelperOwnersAllowed+`"`)
	t.Cleanup(func() { labelHelperNamespace(t, "null") })
	require.NoError(t, createPod(t, owners), "admitted where the namespace is labelled")
	ownersPlus := owners.DeepCopy()
	ownersPlus.Spec.Containers[0].SecurityContext.Capabilities.Add = append(ownersPlus.Spec.Containers[0].SecurityContext.Capabilities.Add, "SYS_ADMIN")
	err = createPod(t, ownersPlus)
	require.Error(t, err, "even there, no capability beyond the two the read needs")
	assert.Contains(t, err.Error(), helperPolicy)
}

// The Job's namespace enforces restricted: the helper (hostNetwork) is refused there by Pod
// Security itself, which is why the helpers have their own namespace.
func TestTheJobsNamespaceRefusesTheHelperPod(t *testing.T) {
	installBundles(t, "rbac-doctor")
	p := podexec.HelperPod(podexec.HelperConfig{Namespace: "lanaccess", RunID: "psa0test"}, "lanaccess-psa0test-1-node-1", "node-1")
	err := createPod(t, p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true)`)
}
