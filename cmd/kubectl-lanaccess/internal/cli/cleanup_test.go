package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// helperOfRun is a helper pod of run, created age ago, in phase.
func helperOfRun(run string, age time.Duration, phase corev1.PodPhase) *corev1.Pod {
	p := podexec.HelperPod(podexec.HelperConfig{RunID: run}, "lanaccess-"+run+"-1-node-1", "node-1")
	p.CreationTimestamp = metav1.NewTime(time.Now().Add(-age))
	p.Status.Phase = phase
	return p
}

func fakeClients(cs *fake.Clientset) clientFactory {
	return func(*kubeFlags, time.Duration) (*clients, error) {
		return &clients{config: &rest.Config{Host: "https://fake.invalid"}, typed: clientgo.Wrap(cs), warnings: &kube.WarningCollector{}}, nil
	}
}

func podNames(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := make([]string, 0, len(l.Items))
	for _, p := range l.Items {
		out = append(out, p.Name)
	}
	return out
}

func TestCleanupKeepsTheHelpersOfRunsStillGoingAndSaysHowToDeleteThem(t *testing.T) {
	cs := fake.NewClientset(
		helperOfRun("a1b2c3d4", time.Minute, corev1.PodRunning),
		helperOfRun("dead0001", 3*time.Hour, corev1.PodRunning),
		helperOfRun("done0002", time.Minute, corev1.PodSucceeded),
	)
	out, errOut, code := runCLI(t, fakeClients(cs), "cleanup")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "deleted pod lanaccess-helpers/lanaccess-dead0001-1-node-1 (run dead0001: Running past its deadline")
	assert.Contains(t, out, "deleted pod lanaccess-helpers/lanaccess-done0002-1-node-1 (run done0002: ended (Succeeded))")
	assert.Contains(t, out, "kept pod lanaccess-helpers/lanaccess-a1b2c3d4-1-node-1 (run a1b2c3d4: Running, its run may still be reading")
	assert.Contains(t, out, "--run-id a1b2c3d4 deletes it")
	assert.Equal(t, []string{"lanaccess-a1b2c3d4-1-node-1"}, podNames(t, cs))

	out, errOut, code = runCLI(t, fakeClients(cs), "cleanup", "--run-id", "a1b2c3d4")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "deleted pod lanaccess-helpers/lanaccess-a1b2c3d4-1-node-1 (run a1b2c3d4: run a1b2c3d4 named with --run-id")
	assert.Empty(t, podNames(t, cs))
}

func TestCleanupAllDeletesRunningHelpersToo(t *testing.T) {
	cs := fake.NewClientset(helperOfRun("a1b2c3d4", time.Minute, corev1.PodRunning))
	out, errOut, code := runCLI(t, fakeClients(cs), "cleanup", "--all")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "deleted pod lanaccess-helpers/lanaccess-a1b2c3d4-1-node-1 (run a1b2c3d4: --all;")
	assert.Empty(t, podNames(t, cs))
}

func TestCleanupRefusesBadRunIDsAndAllWithRunIDs(t *testing.T) {
	for _, args := range [][]string{
		{"cleanup", "--run-id", "a b"},
		{"cleanup", "--run-id", "x)"},
		{"cleanup", "--all", "--run-id", "a1b2c3d4"},
	} {
		_, _, code := runCLI(t, fakeClients(fake.NewClientset()), args...)
		assert.Equal(t, ExitUsage, code, "%v", args)
	}
}

// The end of a run deletes its helper pods; one it cannot delete is a warning on stderr naming
// the pod and the cleanup command, never silence.
func TestAHelperTheRunCannotDeleteIsAWarningNamingThePodAndCleanup(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return false, nil, nil
	})
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New("denied"))
	})
	set, err := probe.NewSet(probe.Config{})
	require.NoError(t, err)
	var warn bytes.Buffer
	rt := &attemptRuntime{probes: set, progress: report.NewProgress(&warn, false), warn: &warn,
		shells: podexec.NewNodeShells(clientgo.Wrap(cs), (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{}), podexec.HelperConfig{RunID: "r9", PollInterval: 10 * time.Millisecond})}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	sh, err := rt.shells.Open(context.Background(), node)
	require.NoError(t, err)
	rt.Close()
	assert.Contains(t, warn.String(), "warning: helper pod lanaccess-helpers/"+sh.Pod.Name+" could not be deleted")
	assert.Contains(t, warn.String(), "kubectl lanaccess cleanup -n lanaccess-helpers --run-id r9")
}

// --dry-run lists what the same run would delete and keep, and sends no delete: the fake
// clientset records every action.
func TestCleanupDryRunDeletesNothing(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		wouldDelete []string
		kept        int
	}{
		{[]string{"cleanup", "--dry-run"}, []string{"lanaccess-dead0001-1-node-1", "lanaccess-done0002-1-node-1"}, 1},
		{[]string{"cleanup", "--dry-run", "--all"}, []string{"lanaccess-a1b2c3d4-1-node-1", "lanaccess-dead0001-1-node-1", "lanaccess-done0002-1-node-1"}, 0},
		{[]string{"cleanup", "--dry-run", "--run-id", "a1b2c3d4"}, []string{"lanaccess-a1b2c3d4-1-node-1"}, 0},
	} {
		cs := fake.NewClientset(
			helperOfRun("a1b2c3d4", time.Minute, corev1.PodRunning),
			helperOfRun("dead0001", 3*time.Hour, corev1.PodRunning),
			helperOfRun("done0002", time.Minute, corev1.PodSucceeded),
		)
		before := podNames(t, cs)
		out, errOut, code := runCLI(t, fakeClients(cs), tc.args...)
		require.Equal(t, 0, code, "%v: %s", tc.args, errOut)
		for _, name := range tc.wouldDelete {
			assert.Contains(t, out, "would delete pod lanaccess-helpers/"+name, "%v", tc.args)
		}
		assert.NotContains(t, out, "deleted pod", "%v", tc.args)
		assert.Equal(t, tc.kept, strings.Count(out, "kept pod"), "%v: %s", tc.args, out)
		assert.ElementsMatch(t, before, podNames(t, cs), "%v deleted a pod", tc.args)
		for _, a := range cs.Actions() {
			assert.NotEqual(t, "delete", a.GetVerb(), "%v sent %v", tc.args, a)
			assert.NotEqual(t, "deletecollection", a.GetVerb(), "%v sent %v", tc.args, a)
		}
	}
}
