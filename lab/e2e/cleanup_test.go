//go:build lab

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// runCleanup runs `kubectl lanaccess cleanup ARGS` and returns its output and exit code.
func runCleanup(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := lanaccessCmd(t, ctx, "", append([]string{"cleanup"}, args...)...).CombinedOutput()
	return string(out), err
}

// Another operator's doctor is reading a node: its helper runs, within its deadline. A killed
// run's helper has ended. cleanup deletes the second and keeps the first, saying how to delete
// it; --run-id deletes it.
func TestCleanupSparesARunningRunsHelperAndDeletesAFinishedOne(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	ns := podexec.DefaultHelperNamespace
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := lab.Client.CoreV1().Pods(ns)
	for _, run := range []string{"live0001", "done0001"} {
		_, err := pods.Create(ctx, podexec.HelperPod(podexec.HelperConfig{RunID: run}, "lanaccess-"+run+"-1-node-1", "node-1"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, run := range []string{"live0001", "done0001"} {
			_ = pods.Delete(context.Background(), "lanaccess-"+run+"-1-node-1", metav1.DeleteOptions{})
		}
	})
	// The finished one: the node's kubelet (kwok) ran it, then it ended.
	eventually(t, time.Minute, func() error {
		p, err := pods.Get(ctx, "lanaccess-done0001-1-node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		p.Status.Phase = corev1.PodSucceeded
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})

	out, err := runCleanup(t)
	require.NoError(t, err, out)
	assert.Contains(t, out, "deleted pod "+ns+"/lanaccess-done0001-1-node-1 (run done0001: ended (Succeeded))")
	assert.Contains(t, out, "kept pod "+ns+"/lanaccess-live0001-1-node-1 (run live0001:")
	assert.Contains(t, out, "--run-id live0001 deletes it")
	assert.ElementsMatch(t, []string{ns + "/lanaccess-live0001-1-node-1"}, ourPodsLeft(t))

	out, err = runCleanup(t, "--run-id", "live0001")
	require.NoError(t, err, out)
	assert.Contains(t, out, "deleted pod "+ns+"/lanaccess-live0001-1-node-1")
	assert.Empty(t, ourPodsLeft(t))
}
