package podexec_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

var cleanupNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// helperAged is a helper pod of run created age ago, in phase, with the default 5-minute deadline.
func helperAged(ns, run, name string, age time.Duration, phase corev1.PodPhase) *corev1.Pod {
	p := podexec.HelperPod(podexec.HelperConfig{Namespace: ns, RunID: run}, name, "node-1")
	p.CreationTimestamp = metav1.NewTime(cleanupNow.Add(-age))
	p.Status.Phase = phase
	if phase != corev1.PodPending {
		p.Status.StartTime = &metav1.Time{Time: cleanupNow.Add(-age + 2*time.Second)}
	}
	return p
}

func names(cs []podexec.CleanedPod) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Pod.String())
	}
	return out
}

// Another operator's doctor is reading a node right now: cleanup must not pull its helper
// from under it. Pods of runs that are over go; a running one within its deadline stays.
func TestCleanupDeletesFinishedRunsAndKeepsRunningOnes(t *testing.T) {
	ns := podexec.DefaultHelperNamespace
	cs := fake.NewClientset(
		helperAged(ns, "live", "lanaccess-live-1-node-1", time.Minute, corev1.PodRunning),
		helperAged(ns, "done", "lanaccess-done-1-node-1", time.Minute, corev1.PodFailed),
		helperAged(ns, "stale", "lanaccess-stale-1-node-1", 2*time.Hour, corev1.PodRunning), // its node never ended it
		helperAged(ns, "stuck", "lanaccess-stuck-1-node-1", time.Hour, corev1.PodPending),
		hostNetPod(ns, "not-ours", "node-1", false),
	)
	res, err := podexec.Cleanup(context.Background(), clientgo.Wrap(cs), podexec.CleanupPolicy{Now: func() time.Time { return cleanupNow }})
	require.NoError(t, err)
	assert.Equal(t, []string{ns + "/lanaccess-done-1-node-1", ns + "/lanaccess-stale-1-node-1", ns + "/lanaccess-stuck-1-node-1"}, names(res.Deleted))
	assert.Equal(t, []string{ns + "/lanaccess-live-1-node-1"}, names(res.Kept))
	assert.Contains(t, res.Kept[0].Why, "deadline in 4m")
	assert.Equal(t, "live", res.Kept[0].RunID)
	for _, c := range res.Deleted {
		assert.NotEmpty(t, c.Why)
	}
	left, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, left.Items, 2, "the running helper and the pod that is not ours")
}

func TestCleanupDeletesTheRunsNamedEvenWhileTheyRun(t *testing.T) {
	ns := podexec.DefaultHelperNamespace
	cs := fake.NewClientset(
		helperAged(ns, "mine", "lanaccess-mine-1-node-1", time.Minute, corev1.PodRunning),
		helperAged(ns, "theirs", "lanaccess-theirs-1-node-1", time.Minute, corev1.PodRunning),
	)
	res, err := podexec.Cleanup(context.Background(), clientgo.Wrap(cs), podexec.CleanupPolicy{RunIDs: []string{"mine"}, Now: func() time.Time { return cleanupNow }})
	require.NoError(t, err)
	assert.Equal(t, []string{ns + "/lanaccess-mine-1-node-1"}, names(res.Deleted))
	assert.Empty(t, res.Kept, "the other run is not even listed")

	res, err = podexec.Cleanup(context.Background(), clientgo.Wrap(cs), podexec.CleanupPolicy{All: true, Now: func() time.Time { return cleanupNow }})
	require.NoError(t, err)
	assert.Equal(t, []string{ns + "/lanaccess-theirs-1-node-1"}, names(res.Deleted))
}

func TestCleanupLooksInOneNamespaceWhenGiven(t *testing.T) {
	cs := fake.NewClientset(
		helperAged("a", "r1", "lanaccess-r1-1-node-1", time.Hour, corev1.PodRunning),
		helperAged("b", "r2", "lanaccess-r2-1-node-1", time.Hour, corev1.PodRunning),
	)
	res, err := podexec.Cleanup(context.Background(), clientgo.Wrap(cs), podexec.CleanupPolicy{Namespace: "a", Now: func() time.Time { return cleanupNow }})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/lanaccess-r1-1-node-1"}, names(res.Deleted))
}

func TestCleanupRefusesRunIDsThatAreNoLabelValue(t *testing.T) {
	for _, id := range []string{"", "a,b", "x)||(y", "run id"} {
		_, err := podexec.Cleanup(context.Background(), clientgo.Wrap(fake.NewClientset()), podexec.CleanupPolicy{RunIDs: []string{id}})
		assert.Error(t, err, "%q", id)
	}
}
