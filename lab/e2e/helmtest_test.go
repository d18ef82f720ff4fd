//go:build lab

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/util/retry"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// helmRelease is the lab's release of a chart holding one shipped Helm test recipe, installed
// by Helm's own library (helm.sh/helm/v3/pkg/action, what `helm install` and `helm test` run)
// against the lab's API server. Its name makes the test pod one of labctl.LoggedPods.
type helmRelease struct {
	cfg       *action.Configuration
	name      string
	namespace string
	pod       string // the test pod Helm creates
}

// helmTestWait is the value lanaccess.wait of the lab's releases: the test pod's --wait. Long
// enough for doctor (vpn-trace) to retry at least once on the broken lab (an attempt takes a few
// seconds, the next starts --wait-interval, 5 s, later), so the log shows the retries, and far
// shorter than the recipe's default, 3m, which the broken case would wait out in full.
const helmTestWait = "15s"

// installHelmTest prints the recipe (manifests NAME printArgs...) with the image's binary, as
// the recipe's header says, saves it as templates/tests/lanaccess.yaml of a chart and installs
// the chart as release "e2e" in namespace with the image of this test as lanaccess.image and
// helmTestWait as lanaccess.wait.
func installHelmTest(t *testing.T, rootfs, tag, namespace, pod string, recipe ...string) helmRelease {
	t.Helper()
	bin := filepath.Join(rootfs, "usr/local/bin/kubectl-lanaccess")
	tmpl := releasetest.Run(t, bin, nil, append([]string{"manifests"}, recipe...)...)
	c := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "lab", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/tests/lanaccess.yaml", Data: []byte(tmpl)}},
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &lab.Kubeconfig
	flags.Namespace = &namespace
	cfg := new(action.Configuration)
	require.NoError(t, cfg.Init(flags, namespace, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }))
	r := helmRelease{cfg: cfg, name: "e2e", namespace: namespace, pod: pod}

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Timeout = r.name, namespace, time.Minute
	_, err := install.Run(c, map[string]any{"lanaccess": map[string]any{"image": version.ImageRepository + ":" + tag, "wait": helmTestWait}})
	require.NoError(t, err, "helm install")
	t.Cleanup(func() {
		_, err := action.NewUninstall(cfg).Run(r.name)
		assert.NoError(t, err, "helm uninstall")
		_ = lab.Client.CoreV1().Pods(namespace).Delete(context.Background(), pod, metav1.DeleteOptions{})
	})
	return r
}

// helmTestRun is what `helm test RELEASE --logs` showed: Run's error (the test's verdict) and
// the output of --logs, with the pod the test left.
type helmTestRun struct {
	Err  error
	Logs string
	Pod  *corev1.Pod
	Took time.Duration
}

// test runs `helm test RELEASE --logs` as Helm's command does (cmd/helm/release_testing.go:
// Run, then GetPodLogs even when the test failed), playing the kubelet's part for the test pod
// meanwhile (playKubelet).
func (r helmRelease) test(t *testing.T, rootfs string, cfg *v1.Config) helmTestRun {
	t.Helper()
	ctx := context.Background()
	var before types.UID // before-hook-creation deletes the last run's pod: wait for a new one
	if p, err := lab.Client.CoreV1().Pods(r.namespace).Get(ctx, r.pod, metav1.GetOptions{}); err == nil {
		before = p.UID
	}
	client := action.NewReleaseTesting(r.cfg)
	client.Namespace, client.Timeout = r.namespace, 6*time.Minute
	type result struct {
		rel *release.Release
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		rel, err := client.Run(r.name)
		done <- result{rel, err}
	}()
	playKubelet(t, rootfs, cfg, r.namespace, r.pod, before)
	res := <-done
	out := helmTestRun{Err: res.err, Took: time.Since(start)}
	require.NotNil(t, res.rel, "helm test found no release: %v", res.err)
	var logs bytes.Buffer
	require.NoError(t, client.GetPodLogs(&logs, res.rel), "helm test --logs")
	out.Logs = logs.String()
	pod, err := lab.Client.CoreV1().Pods(r.namespace).Get(ctx, r.pod, metav1.GetOptions{})
	require.NoError(t, err, "the test pod is kept after the test (before-hook-creation only)")
	out.Pod = pod
	t.Logf("helm test %s took %s: %v\n%s", r.name, out.Took.Round(time.Millisecond), out.Err, out.Logs)
	return out
}

// playKubelet does for the test pod what a kubelet and its container runtime do, as the lab
// runs no process for the plugin's image: once kwok started the pod (Running, podStartStage),
// it runs the pod's container from the image's filesystem (runPodContainer), writes its log
// in the CRI format to the file the lab's kwok serves as that pod's log (labctl.LoggedPods),
// and writes the pod's status through the API as the kubelet's status manager does: the
// container terminated with its exit code and termination message, the pod Succeeded or
// Failed (restartPolicy Never). Unlike a runtime's, the log file is written once the container
// ended, not while it runs: Helm reads it only then. The status is written rather than reached by a kwok Stage
// keyed on an annotation: the kubelet reports the phase from the exit code and touches
// no annotation.
func playKubelet(t *testing.T, rootfs string, cfg *v1.Config, namespace, name string, before types.UID) {
	t.Helper()
	ctx := context.Background()
	var pod *corev1.Pod
	eventually(t, 2*time.Minute, func() error {
		p, err := lab.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case p.UID == before || p.DeletionTimestamp != nil:
			return fmt.Errorf("the last test's pod %s is still there", p.UID)
		case p.Status.Phase != corev1.PodRunning:
			return fmt.Errorf("pod %s is %s, not yet started by kwok", name, p.Status.Phase)
		}
		pod = p
		return nil
	})
	require.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy, "a test pod runs once")
	run := runPodContainer(t, rootfs, cfg, *pod)
	file := lab.PodLogsFile(namespace, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, run.CRILog(), 0o644))

	// The kubelet's status for a container that exited (kuberuntime, toKubeContainerStatus;
	// status manager): reason Completed on 0, Error otherwise; phase from the exit codes
	// (kubelet_pods.go, getPhase: all terminated, restartPolicy Never).
	code := run.ExitCode()
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	c := pod.Spec.Containers[0]
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := lab.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: c.Name, Image: c.Image, Ready: false, Started: new(bool),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: int32(code), Reason: reason, Message: string(run.Message),
				StartedAt: metav1.NewTime(run.Start), FinishedAt: metav1.NewTime(run.End),
			}},
		}}
		for i := range p.Status.Conditions {
			if k := p.Status.Conditions[i].Type; k == corev1.PodReady || k == corev1.ContainersReady {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = corev1.ConditionFalse, "PodCompleted"
			}
		}
		_, err = lab.Client.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}))
}

// The shipped Helm test (manifests helm-test), printed by the image's binary with a CA
// ConfigMap, in a chart installed and tested by Helm's own library on the lab: on the healthy
// lab the test succeeds, and with the proxy serving an expired certificate it fails; either way
// --logs prints doctor's report from the pod, which Helm kept (helm/helm#9098).
func TestTheShippedHelmTestRunsWithHelm(t *testing.T) {
	rootfs, tag, cfg := labImage(t)
	applyManifest(t, "rbac-doctor")
	r := installHelmTest(t, rootfs, tag, "lanaccess", "e2e-lanaccess-doctor", "helm-test", "--ca-configmap", proxyCAConfigMap(t))

	ok := r.test(t, rootfs, cfg)
	require.NoError(t, ok.Err, "helm test on the healthy lab")
	assert.Equal(t, corev1.PodSucceeded, ok.Pod.Status.Phase)
	assert.Equal(t, "e2e-lanaccess", ok.Pod.Spec.ServiceAccountName)
	assert.Contains(t, ok.Logs, "POD LOGS: e2e-lanaccess-doctor\n")
	assert.Contains(t, ok.Logs, "PASS  LA401", "doctor's report")
	assert.Equal(t, helmTestWait, waitOf(t, ok.Pod), "the value lanaccess.wait is the pod's --wait")

	lab.ServeWrongCertificate(t, labkit.CertExpired)
	bad := r.test(t, rootfs, cfg)
	require.Error(t, bad.Err, "helm test with the proxy's certificate expired")
	assert.Contains(t, bad.Err.Error(), "e2e-lanaccess-doctor")
	assert.Equal(t, corev1.PodFailed, bad.Pod.Status.Phase)
	assert.NotEqual(t, ok.Pod.UID, bad.Pod.UID, "before-hook-creation replaced the last pod")
	assert.Contains(t, bad.Logs, "FAIL  LA401", "--logs prints the failing report")
	assert.Contains(t, bad.Logs, "certificate has expired")
	assert.Contains(t, bad.Logs, "attempt 1: still failing: ", "--wait re-ran doctor, each attempt in the log")
}

// waitOf is the --wait of the pod's container.
func waitOf(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	args := pod.Spec.Containers[0].Args
	i := slices.Index(args, "--wait")
	require.True(t, i >= 0 && i+1 < len(args), "no --wait in %q", args)
	return args[i+1]
}

// The shipped VPN Helm test (manifests helm-test-vpn) in a release in the VPN pods' namespace:
// the release's ServiceAccount execs into the lab's OpenVPN pod through the real API server;
// the test fails with forwarding off (VPN002 and its fix in --logs) and passes with it on.
func TestTheShippedVPNHelmTestRunsWithHelm(t *testing.T) {
	rootfs, tag, cfg := labImage(t)
	applyManifest(t, "rbac-doctor")
	r := installHelmTest(t, rootfs, tag, "vpn", "e2e-lanaccess-vpn-trace", "helm-test-vpn")

	lab.SetVPNPodIPForward(t, false)
	off := r.test(t, rootfs, cfg)
	require.Error(t, off.Err, "helm test with ip_forward=0 in the VPN pod")
	assert.Equal(t, corev1.PodFailed, off.Pod.Status.Phase)
	assert.Equal(t, "e2e-lanaccess-vpn", off.Pod.Spec.ServiceAccountName)
	assert.Contains(t, off.Logs, "POD LOGS: e2e-lanaccess-vpn-trace\n")
	assert.Contains(t, off.Logs, "FAIL  VPN002")
	assert.Contains(t, off.Logs, "[VPN002-OFF]")
	assert.Contains(t, off.Logs, "sysctl -w net.ipv4.ip_forward=1", "the fix")
	assert.Equal(t, helmTestWait, waitOf(t, off.Pod), "the value lanaccess.wait is the pod's --wait")
	assert.Contains(t, off.Logs, "attempt 1: still failing: VPN002=fail", "--wait re-ran vpn-trace, each attempt in the log")

	lab.SetVPNPodIPForward(t, true)
	on := r.test(t, rootfs, cfg)
	require.NoError(t, on.Err, "helm test with forwarding on")
	assert.Equal(t, corev1.PodSucceeded, on.Pod.Status.Phase)
	assert.Contains(t, on.Logs, "PASS  VPN002")
	assert.NotEqual(t, off.Pod.UID, on.Pod.UID, "before-hook-creation replaced the last pod")
}
