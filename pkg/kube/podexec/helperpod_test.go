package podexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

func readyNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

func hostNetPod(ns, name, node string, hostPID bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, HostNetwork: true, HostPID: hostPID, Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}},
	}
}

// daemonSet is a DaemonSet with a UID, for pods to name as their controller.
func daemonSet(ns, name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
}

// controlledBy makes ds the pod's controller, as the DaemonSet controller does.
func controlledBy(p *corev1.Pod, ds *appsv1.DaemonSet) *corev1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: new(true)}}
	return p
}

// kubeletStarts makes created pods look like the kubelet ran them with the given status.
func kubeletStarts(cs *fake.Clientset, status func(*corev1.Pod)) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		status(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
		return false, nil, nil
	})
}

func running(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func ourPods(t *testing.T, cs *fake.Clientset) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: podexec.ManagedByLabel + "=" + podexec.ManagedByValue})
	require.NoError(t, err)
	return l.Items
}

func fastConfig() podexec.HelperConfig {
	return podexec.HelperConfig{Namespace: "lanaccess", RunID: "r1", StartTimeout: 2 * time.Second, PollInterval: 20 * time.Millisecond}
}

func TestAPodOfATrustedSystemDaemonSetIsUsedAndNothingIsCreated(t *testing.T) {
	proxy, cilium := daemonSet("kube-system", "kube-proxy"), daemonSet("kube-system", "cilium")
	cs := kubetest.ClientsetWithHelperPolicy(proxy, cilium,
		controlledBy(hostNetPod("kube-system", "kube-proxy-a", "node-2", false), proxy),
		controlledBy(hostNetPod("kube-system", "cilium-x", "node-2", true), cilium),
		controlledBy(hostNetPod("kube-system", "kube-proxy-b", "node-1", true), proxy),
	)
	ex := (&kubetest.FakeExecutor{}).On("", "cat /proc/net/tcp", kubetest.Reply{Stdout: "  sl  local_address\n"})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), ex, fastConfig())
	sh, err := shells.Open(context.Background(), readyNode("node-2"))
	require.NoError(t, err)
	assert.Equal(t, podexec.PodRef{Namespace: "kube-system", Name: "cilium-x"}, sh.Pod, "the one sharing the host PID namespace first")
	assert.True(t, sh.HostPID)
	assert.False(t, sh.Helper)
	assert.Equal(t, "pod kube-system/cilium-x of DaemonSet kube-system/cilium", sh.Via())
	require.NoError(t, sh.Close())
	assert.Empty(t, ourPods(t, cs))
	_, err = cs.CoreV1().Pods("kube-system").Get(context.Background(), "cilium-x", metav1.GetOptions{})
	require.NoError(t, err)
}

// Whoever runs a hostNetwork pod controls what its `cat /proc/net/tcp` prints: such a pod
// could answer for LA201. Only the pods of allowlisted system DaemonSets, confirmed by their
// controller's UID, are read; anything else gets our own helper.
func TestATenantsHostNetworkPodIsNeverReadEvenWhenItLooksLikeKubeProxy(t *testing.T) {
	proxy := daemonSet("kube-system", "kube-proxy")
	impostorDS := daemonSet("tenant-a", "kube-proxy")
	forged := controlledBy(hostNetPod("kube-system", "kube-proxy-forged", "node-1", true), proxy)
	forged.OwnerReferences[0].UID = "not-the-daemonsets-uid"
	cs := kubetest.ClientsetWithHelperPolicy(proxy, impostorDS,
		hostNetPod("tenant-a", "node-exporter", "node-1", true),
		hostNetPod("kube-system", "kube-proxy-lookalike", "node-1", true),
		controlledBy(hostNetPod("tenant-a", "kube-proxy-t", "node-1", true), impostorDS),
		forged,
	)
	kubeletStarts(cs, running)
	ex := (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{Stdout: "  sl  local_address\n"})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), ex, fastConfig())
	sh, err := shells.Open(context.Background(), readyNode("node-1"))
	require.NoError(t, err)
	assert.True(t, sh.Helper, "read through %s", sh.Via())
	for _, c := range ex.Calls() {
		assert.Equal(t, "lanaccess", c.Pod.Namespace, "exec into %s", c.Pod)
	}
	require.NoError(t, sh.Close())
}

func TestNamingOwnersUsesOnlyReadersInTheHostPIDNamespace(t *testing.T) {
	proxy := daemonSet("kube-system", "kube-proxy")
	cs := kubetest.ClientsetWithHelperPolicy(proxy, controlledBy(hostNetPod("kube-system", "kube-proxy-a", "node-1", false), proxy))
	kubeletStarts(cs, running)
	ex := (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{Stdout: "  sl  local_address\n"})
	cfg := fastConfig()
	cfg.NameOwners = true
	sh, err := podexec.NewNodeShells(clientgo.Wrap(cs), ex, cfg).Open(context.Background(), readyNode("node-1"))
	require.NoError(t, err)
	assert.True(t, sh.Helper, "kube-proxy does not see the node's processes")
	assert.True(t, sh.HostPID)
	require.NoError(t, sh.Close())
}

func TestWhenExecIntoExistingPodsFailsAHelperPodIsCreatedThenDeleted(t *testing.T) {
	proxy := daemonSet("kube-system", "kube-proxy")
	cs := kubetest.ClientsetWithHelperPolicy(proxy, controlledBy(hostNetPod("kube-system", "kube-proxy-a", "node-2", false), proxy))
	kubeletStarts(cs, running)
	ex := (&kubetest.FakeExecutor{}).
		On("kube-system/kube-proxy-a", "", kubetest.Missing("sh")).
		On("", "cat /proc/net/tcp", kubetest.Reply{Stdout: "ok"})
	cfg := fastConfig()
	cfg.Image = "registry.local/busybox:1.36.1"
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), ex, cfg)
	sh, err := shells.Open(context.Background(), readyNode("node-2"))
	require.NoError(t, err)
	assert.True(t, sh.Helper)
	assert.True(t, strings.HasPrefix(sh.Pod.Name, "lanaccess-r1-1-node-2"), sh.Pod.Name)

	pods := ourPods(t, cs)
	require.Len(t, pods, 1)
	p := pods[0]
	assert.Equal(t, "lanaccess", p.Namespace)
	assert.Equal(t, "node-2", p.Spec.NodeName)
	assert.True(t, p.Spec.HostNetwork)
	assert.Equal(t, "r1", p.Labels[podexec.RunIDLabel])
	require.NotNil(t, p.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, int64(300), *p.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, p.Spec.Tolerations)
	c := p.Spec.Containers[0]
	assert.Equal(t, "registry.local/busybox:1.36.1", c.Image)
	assert.False(t, *p.Spec.AutomountServiceAccountToken)

	require.NoError(t, sh.Close())
	assert.Empty(t, ourPods(t, cs))
}

func TestANotReadyNodeIsNotPermittedAndCreatesNothing(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
	n := readyNode("node-3")
	n.Status.Conditions[0].Status = corev1.ConditionUnknown
	_, err := shells.Open(context.Background(), n)
	var he *podexec.HelperError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, podexec.CauseNodeNotReady, he.Cause)
	assert.True(t, he.NotPermitted())
	assert.Empty(t, cs.Actions())
}

func TestRejectionsAtCreateNameTheCauseAndTheFlagThatHelps(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		cause     podexec.HelperCause
		fix       string
		permitted bool
	}{
		{"pod security", apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New(`violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`)),
			podexec.CausePodSecurity, "kubectl lanaccess manifests rbac-helpers", false},
		{"no namespace", apierrors.NewNotFound(corev1.Resource("namespaces"), "lanaccess"),
			podexec.CauseNoNamespace, "kubectl lanaccess manifests rbac-helpers", false},
		// The message format of k8s.io/apiserver's validating policy dispatcher (dispatcher.go).
		{"admission policy", apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New(`ValidatingAdmissionPolicy 'kubectl-lanaccess-helper-pods' with binding 'kubectl-lanaccess-helper-pods' denied request: the image is pinned by digest`)),
			podexec.CauseAdmission, podexec.HelperImageDigest, false},
		// A policy validation without a reason answers 422 Invalid (the API's default).
		{"admission policy without a reason", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: `pods "x" is forbidden: ValidatingAdmissionPolicy 'kubectl-lanaccess-helper-pods' with binding 'kubectl-lanaccess-helper-pods' denied request: a helper pod shares the node's network only`}},
			podexec.CauseAdmission, podexec.HelperImageDigest, false},
		{"rbac", apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New(`User "viewer" cannot create resource "pods" in API group "" in the namespace "lanaccess"`)),
			podexec.CauseForbidden, "grant create, get, list, delete on pods", false},
		{"webhook", apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New(`admission webhook "validate.kyverno.svc" denied the request: host namespaces are not allowed`)),
			podexec.CauseAdmission, "--no-helpers", false},
		{"api down", apierrors.NewServiceUnavailable("etcd leader changed"), podexec.CauseAPI, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := kubetest.ClientsetWithHelperPolicy()
			cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, c.err })
			shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
			_, err := shells.Open(context.Background(), readyNode("node-1"))
			var he *podexec.HelperError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, c.cause, he.Cause)
			assert.Contains(t, err.Error(), c.fix)
			assert.Contains(t, err.Error(), "node node-1")
			assert.Equal(t, !c.permitted, he.NotPermitted())
		})
	}
}

func TestAnImageThatCannotBePulledEndsTheWaitAtOnceNamingImageAndIsDeleted(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "reader", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "busybox:1.36.1"`}}}}
	})
	cfg := fastConfig()
	cfg.StartTimeout = time.Minute
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, cfg)
	start := time.Now()
	_, err := shells.Open(context.Background(), readyNode("node-1"))
	assert.Less(t, time.Since(start), 5*time.Second)
	var he *podexec.HelperError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, podexec.CauseImagePull, he.Cause)
	assert.Contains(t, err.Error(), "--image")
	assert.False(t, he.NotPermitted())
	assert.Empty(t, ourPods(t, cs))
}

func TestAHelperThatNeverStartsTimesOutAndIsDeleted(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	cfg := fastConfig()
	cfg.StartTimeout = 200 * time.Millisecond
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, cfg)
	_, err := shells.Open(context.Background(), readyNode("node-1"))
	var he *podexec.HelperError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, podexec.CauseStartTimeout, he.Cause)
	assert.Contains(t, err.Error(), "did not start within 200ms")
	assert.Empty(t, ourPods(t, cs))
}

func TestAFailedHelperPodIsReportedWithTheKubeletsReason(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "OutOfmemory"
		p.Status.Message = "Node didn't have enough resource: memory"
	})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
	_, err := shells.Open(context.Background(), readyNode("node-1"))
	var he *podexec.HelperError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, podexec.CausePodFailed, he.Cause)
	assert.Contains(t, err.Error(), "OutOfmemory")
	assert.Empty(t, ourPods(t, cs))
}

func TestCtrlCWhileWaitingDeletesTheHelper(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	created := make(chan struct{}, 1)
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Status.Phase = corev1.PodPending
		created <- struct{}{}
		return false, nil, nil
	})
	cfg := fastConfig()
	cfg.StartTimeout = time.Minute
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-created; time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := shells.Open(ctx, readyNode("node-1"))
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, ourPods(t, cs))
}

func TestACreateWhoseAnswerWasLostIsStillDeleted(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// The object lands, the caller only sees its deadline pass.
		obj := a.(k8stesting.CreateAction).GetObject()
		require.NoError(t, cs.Tracker().Create(a.GetResource(), obj, a.GetNamespace()))
		return true, nil, context.DeadlineExceeded
	})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
	_, err := shells.Open(context.Background(), readyNode("node-1"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, ourPods(t, cs))
}

func TestCloseDeletesWhatThisRunLeftButNotOtherRuns(t *testing.T) {
	mine := podexec.HelperPod(podexec.HelperConfig{Namespace: "lanaccess", RunID: "r1"}, "lanaccess-r1-1-node-1", "node-1")
	theirs := podexec.HelperPod(podexec.HelperConfig{Namespace: "lanaccess", RunID: "r2"}, "lanaccess-r2-1-node-1", "node-1")
	cs := kubetest.ClientsetWithHelperPolicy(mine, theirs)
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
	require.NoError(t, shells.Close())
	left := ourPods(t, cs)
	require.Len(t, left, 1)
	assert.Equal(t, "lanaccess-r2-1-node-1", left[0].Name)
}

func TestHelperNamesStayValidForLongNodeNames(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	kubeletStarts(cs, running)
	ex := (&kubetest.FakeExecutor{}).On("", "", kubetest.Reply{})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), ex, fastConfig())
	long := "Worker_" + strings.Repeat("x", 200) + ".eu-west-1.compute.internal"
	sh, err := shells.Open(context.Background(), readyNode(long))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(sh.Pod.Name), 63)
	assert.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, sh.Pod.Name)
	require.NoError(t, sh.Close())
}

// A run that never asked for a helper pod (--no-helpers, or nothing to read) has nothing to
// warn about when the helper namespace cannot be listed (namespace-only RBAC).
func TestCloseWithoutAHelperDoesNotWarnWhenItCannotList(t *testing.T) {
	cs := kubetest.ClientsetWithHelperPolicy()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("namespace only"))
	})
	shells := podexec.NewNodeShells(clientgo.Wrap(cs), &kubetest.FakeExecutor{}, fastConfig())
	assert.NoError(t, shells.Close())
}
