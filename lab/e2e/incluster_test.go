//go:build lab

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
	"github.com/lanaccess/kubectl-lanaccess/pkg/release/image"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// applyYAML pipes YAML into the lab's kubectl; delete undoes it at cleanup.
func applyYAML(t *testing.T, what string, raw []byte) {
	t.Helper()
	run := func(verb string, extra ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := lab.KubectlCmd(ctx, append([]string{verb, "-f", "-"}, extra...)...)
		cmd.Stdin = bytes.NewReader(raw)
		return cmd.CombinedOutput()
	}
	out, err := run("apply")
	require.NoError(t, err, "kubectl apply %s: %s", what, out)
	t.Cleanup(func() { _, _ = run("delete", "--ignore-not-found", "--wait=false") })
}

// applyManifest applies a shipped manifest.
func applyManifest(t *testing.T, name string) {
	t.Helper()
	raw, err := manifests.Get(name)
	require.NoError(t, err)
	applyYAML(t, name, raw)
}

// labImage builds the plugin's image from this checkout as a release does (both platforms, the
// release's ldflags, an OCI layout) and unpacks this machine's platform into a root filesystem.
func labImage(t *testing.T) (rootfs, tag string, cfg *v1.Config) {
	t.Helper()
	root := filepath.Dir(lab.LabDir)
	const v = "v0.0.0-lab+e2e"
	bins := map[string]string{}
	for _, p := range image.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		out := filepath.Join(t.TempDir(), "kubectl-lanaccess")
		require.NoError(t, releasetest.BuildTo(out, root, goos, goarch, releasetest.LDFlags(v, "0000000000000000000000000000000000000000", "2026-11-30T00:00:00Z")))
		bins[p] = out
	}
	idx, info, err := image.Build(context.Background(), image.Options{Binaries: bins, License: filepath.Join(root, "LICENSE"), Version: v})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "layout")
	require.NoError(t, image.WriteLayout(dir, idx, version.ImageTag(info.Version)))

	img, err := image.Read(dir, runtime.GOOS+"/"+runtime.GOARCH)
	require.NoError(t, err)
	file, err := img.ConfigFile()
	require.NoError(t, err)
	rootfs = t.TempDir()
	require.NoError(t, image.Unpack(img, rootfs))
	return rootfs, version.ImageTag(v), &file.Config
}

// The image's binary runs as the shipped Job runs it: the Job, printed by that binary with a CA
// ConfigMap, applies to the lab's API server and its controller runs it to completion (kwok
// completes the pod; the re-run recipe of the Job's header waits for it); then the binary runs
// from the image's unpacked filesystem, read-only, as user 65532, with the pod's command, args
// and environment (the image's PATH, KUBERNETES_SERVICE_*, HOME as runc sets it), and the pod's
// volumes where the pod mounts them: the service account's token, CA and namespace (the
// projected kube-api-access volume, with kube-root-ca.crt's content) and the CA ConfigMap. No
// kubeconfig. Its log (stdout and stderr, as `kubectl logs` shows them) holds the JSON report.
//
// Two differences from a kubelet, both about the network: the run happens in the laptop's
// namespace (kwok nodes run no containers), so KUBERNETES_SERVICE_HOST is the API server's
// address rather than the kubernetes Service's ClusterIP, which nothing proxies there.
// The image's binary runs as the shipped Job runs it (runShippedJob), with a CA ConfigMap: the
// whole log is the JSON report, and doctor passes with the shipped read-only RBAC.
func TestTheImageRunsAsTheShippedJob(t *testing.T) {
	rootfs, tag, cfg := labImage(t)
	applyManifest(t, "rbac-doctor")
	caConfigMap := proxyCAConfigMap(t)

	pod, doc, message := runShippedJob(t, rootfs, tag, cfg, "job", "lanaccess-doctor", "--ca-configmap", caConfigMap)
	assert.Equal(t, "kubectl-lanaccess", pod.Spec.ServiceAccountName)
	assert.Equal(t, manifests.TerminationLog, pod.Spec.Containers[0].TerminationMessagePath)
	// The report, as the recipe takes it from `kubectl logs`: the whole log is the JSON
	// report; what went to stderr is in the termination message.
	t.Logf("termination message (%d bytes): %q", len(message), message)
	r := result{Stdout: string(doc), hasJSON: true}
	require.NoError(t, json.Unmarshal(doc, &r.Doc), "the log is one JSON document:\n%s", doc)
	assert.Equal(t, "pass", r.check(t, "LA101").Status)
	assert.Equal(t, "pass", r.check(t, "LA301").Status)
	assert.Equal(t, "pass", r.check(t, "LA401").Status, "the proxy's certificate verifies with the CA of the mounted ConfigMap")
	assert.Empty(t, permissionSkips(r), "the shipped read-only RBAC is enough in-cluster")
	assert.Contains(t, string(doc), `"context": "in-cluster"`)
}

// proxyCAConfigMap creates, until cleanup, the ConfigMap lanaccess/lanaccess-proxy-ca holding
// the lab's CA (which signs the proxy's certificate) as ca.crt, for --ca-configmap.
func proxyCAConfigMap(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ca, err := os.ReadFile(lab.CAFile)
	require.NoError(t, err)
	const name = "lanaccess-proxy-ca"
	_, err = lab.Client.CoreV1().ConfigMaps("lanaccess").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.CoreV1().ConfigMaps("lanaccess").Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// The VPN's Job (job-vpn) runs vpn-trace as rbac-vpn-exec's ServiceAccount, on the lab's
// OpenVPN pods with forwarding on: the real API server admits the Job and authorizes the exec,
// the whole log is the JSON report, and VPN001 and VPN002 pass with no permission SKIP.
func TestTheImageRunsTheShippedVPNJob(t *testing.T) {
	rootfs, tag, cfg := labImage(t)
	applyManifest(t, "rbac-doctor")
	applyManifest(t, "rbac-vpn-exec")
	lab.SetVPNPodIPForward(t, true)

	pod, doc, message := runShippedJob(t, rootfs, tag, cfg, "job-vpn", "lanaccess-vpn-trace")
	assert.Equal(t, "kubectl-lanaccess-vpn", pod.Spec.ServiceAccountName)
	t.Logf("termination message (%d bytes): %q", len(message), message)
	r := result{Stdout: string(doc), hasJSON: true}
	require.NoError(t, json.Unmarshal(doc, &r.Doc), "the log is one JSON document:\n%s", doc)
	ids := make([]string, 0, len(r.Doc.Checks))
	for _, c := range r.Doc.Checks {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"VPN001", "VPN002"}, ids)
	assert.Equal(t, "pass", r.check(t, "VPN001").Status)
	assert.Equal(t, "pass", r.check(t, "VPN002").Status, "ip_forward read by exec as the exec grant's ServiceAccount")
	assert.Empty(t, permissionSkips(r))
}

// runShippedJob runs a Job the image's binary prints (manifests NAME printArgs...) as the
// recipe of its header does against the lab's Job controller (kwok completes the pod), then
// runs the pod's container from the image's unpacked filesystem, read-only, as the pod's user,
// with the pod's command, args and environment (the image's PATH, KUBERNETES_SERVICE_*, HOME as
// runc sets it), and the pod's volumes where the pod mounts them: the service account's token,
// CA and namespace (the projected kube-api-access volume, with kube-root-ca.crt's content), any
// ConfigMap, and the kubelet's termination message file. No kubeconfig. It returns the pod, its
// log (stdout and stderr, as `kubectl logs` shows them) and its termination message.
//
// Two differences from a kubelet, both about the network: the run happens in the laptop's
// namespace (the lab runs no process for the plugin's image), so KUBERNETES_SERVICE_HOST is the
// API server's address rather than the kubernetes Service's ClusterIP, which nothing proxies
// there.
func runShippedJob(t *testing.T, rootfs, tag string, cfg *v1.Config, manifest, name string, printArgs ...string) (corev1.Pod, []byte, []byte) {
	t.Helper()
	bin := filepath.Join(rootfs, "usr/local/bin/kubectl-lanaccess")
	ctx := context.Background()
	// The Job as the binary in the image prints it, and the recipe of its header.
	job := releasetest.Run(t, bin, nil, append([]string{"manifests", manifest}, printArgs...)...)
	assert.Contains(t, job, "image: "+version.ImageRepository+":"+tag+"\n", "the Job names the image its binary is in")
	kubectl := func(args ...string) string {
		c, cancel := context.WithTimeout(ctx, 7*time.Minute)
		defer cancel()
		out, err := lab.KubectlCmd(c, args...).CombinedOutput()
		require.NoError(t, err, "kubectl %v: %s", args, out)
		return string(out)
	}
	kubectl("-n", "lanaccess", "delete", "job", name, "--ignore-not-found")
	applyYAML(t, "job", []byte(job))
	kubectl("-n", "lanaccess", "wait", "job/"+name, "--timeout=6m", "--for=jsonpath={.status.conditions[-1:].type}")
	kubectl("-n", "lanaccess", "wait", "job/"+name, "--timeout=30s", "--for=condition=Complete")

	pods, err := lab.Client.CoreV1().Pods("lanaccess").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	pod := pods.Items[0]
	require.Len(t, pod.Spec.Containers, 1)
	assert.Equal(t, version.ImageRepository+":"+tag, pod.Spec.Containers[0].Image)
	run := runPodContainer(t, rootfs, cfg, pod)
	require.NoError(t, run.Err, "the Job's container fails:\n%s", run.Log())
	return pod, run.Log(), run.Message
}

// containerRun is what a container's run left: its log lines in order with their stream, its
// termination message (the kubelet's last 4096 bytes) and how it ended.
type containerRun struct {
	Lines      []logLine
	Message    []byte
	Err        error // an *exec.ExitError when the command exited non-zero
	Start, End time.Time
}

type logLine struct {
	Stream string // stdout, stderr
	Text   string // with its newline, unless the stream ended without one
	At     time.Time
}

// Log is the log as `kubectl logs` shows it: both streams, in order.
func (r containerRun) Log() []byte {
	var b bytes.Buffer
	for _, l := range r.Lines {
		b.WriteString(l.Text)
	}
	return b.Bytes()
}

// CRILog is the log in the CRI log format a container runtime writes and the kubelet (and
// kwok) reads: "TIME STREAM TAG TEXT" per line, tag F for a full line and P for a partial
// one (k8s.io/cri-client pkg/logs, parseCRILog).
func (r containerRun) CRILog() []byte {
	var b bytes.Buffer
	for _, l := range r.Lines {
		text, full := strings.CutSuffix(l.Text, "\n")
		tag := "P"
		if full {
			tag = "F"
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", l.At.UTC().Format(time.RFC3339Nano), l.Stream, tag, text)
	}
	return b.Bytes()
}

// ExitCode is the container's exit code (0 when it succeeded, -1 when it could not run).
func (r containerRun) ExitCode() int {
	if r.Err == nil {
		return 0
	}
	if exit, ok := errors.AsType[*exec.ExitError](r.Err); ok {
		return exit.ExitCode()
	}
	return -1
}

// streamLog splits what one stream writes into lines, appended to a shared, ordered list.
type streamLog struct {
	mu      *sync.Mutex
	lines   *[]logLine
	stream  string
	partial string
}

func (s *streamLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial += string(p)
	for {
		i := strings.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		*s.lines = append(*s.lines, logLine{Stream: s.stream, Text: s.partial[:i+1], At: time.Now()})
		s.partial = s.partial[i+1:]
	}
}

func (s *streamLog) flush() {
	if s.partial != "" {
		*s.lines = append(*s.lines, logLine{Stream: s.stream, Text: s.partial, At: time.Now()})
		s.partial = ""
	}
}

// runPodContainer runs the pod's one container from the image's unpacked filesystem as the
// container runtime would (see runShippedJob), in the pod's namespace.
func runPodContainer(t *testing.T, rootfs string, cfg *v1.Config, pod corev1.Pod) containerRun {
	t.Helper()
	ctx := context.Background()
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	require.NotNil(t, pod.Spec.SecurityContext.RunAsUser)
	require.NotNil(t, pod.Spec.SecurityContext.RunAsGroup)
	user := fmt.Sprintf("%d:%d", *pod.Spec.SecurityContext.RunAsUser, *pod.Spec.SecurityContext.RunAsGroup)
	assert.Equal(t, cfg.User, user, "the pod runs as the image's user")

	// The pod's volumes, with the content the kubelet would put there.
	volumes := t.TempDir()
	mounts := make([]string, 0, len(c.VolumeMounts)+2) // "SOURCE TARGET" pairs: the volumes, resolv.conf and hosts
	for _, m := range c.VolumeMounts {
		src := filepath.Join(volumes, m.Name)
		require.NoError(t, os.MkdirAll(src, 0o755))
		vol := volumeNamed(t, pod, m.Name)
		switch {
		case vol.Projected != nil: // kube-api-access-*: token, ca.crt, namespace
			tok, err := lab.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName,
				&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
			require.NoError(t, err)
			var rootCA *corev1.ConfigMap
			eventually(t, time.Minute, func() error {
				rootCA, err = lab.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return errorf("the controller-manager has not published kube-root-ca.crt yet")
				}
				return err
			})
			writeFiles(t, src, map[string]string{"token": tok.Status.Token, "ca.crt": rootCA.Data["ca.crt"], "namespace": pod.Namespace})
		case vol.ConfigMap != nil:
			cm, err := lab.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, vol.ConfigMap.Name, metav1.GetOptions{})
			require.NoError(t, err)
			files := map[string]string{}
			for _, item := range vol.ConfigMap.Items {
				files[item.Path] = cm.Data[item.Key]
			}
			writeFiles(t, src, files)
		default:
			t.Fatalf("volume %s: a kind this test does not provide", m.Name)
		}
		mounts = append(mounts, src+" "+filepath.Join(rootfs, m.MountPath))
	}
	// The kubelet's /etc/resolv.conf for dnsPolicy ClusterFirst, and /etc/hosts.
	etc := filepath.Join(volumes, "etc")
	writeFiles(t, etc, map[string]string{
		"resolv.conf": "search " + pod.Namespace + ".svc.cluster.local svc.cluster.local cluster.local\nnameserver " + lab.ClusterDNSIP() + "\noptions ndots:5\n",
		"hosts":       "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
	})
	mounts = append(mounts, filepath.Join(etc, "resolv.conf")+" "+filepath.Join(rootfs, "etc/resolv.conf"),
		filepath.Join(etc, "hosts")+" "+filepath.Join(rootfs, "etc/hosts"))

	api, err := url.Parse(lab.Config.Host)
	require.NoError(t, err)
	env := append([]string{}, cfg.Env...) // the image's PATH and HOME
	env = append(env, "HOSTNAME="+pod.Name, "KUBERNETES_SERVICE_HOST="+api.Hostname(), "KUBERNETES_SERVICE_PORT="+api.Port())
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	// runc (libcontainer/init_linux.go, setupUser) sets HOME only when the environment has none:
	// from the user's passwd entry, "/" without one (the image has no /etc/passwd).
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "HOME=") }) {
		env = append(env, "HOME=/")
	}

	// A private mount namespace: the mount points, the volumes bound on them, /proc and /dev,
	// the root made read-only (readOnlyRootFilesystem); then the pod's command, run by chroot
	// with the container's environment only, so that PATH inside the image finds it.
	var script strings.Builder
	line := func(args ...string) {
		for i, a := range args {
			if i > 0 {
				script.WriteString(" ")
			}
			script.WriteString(a)
		}
		script.WriteString("\n")
	}
	line("set -e")
	for _, m := range mounts {
		src, dst, _ := strings.Cut(m, " ")
		if st, err := os.Stat(src); err == nil && st.IsDir() {
			line("mkdir -p", shq(dst))
		} else {
			line("mkdir -p", shq(filepath.Dir(dst)), "&& touch", shq(dst))
		}
	}
	line("mkdir -p", shq(filepath.Join(rootfs, "proc")), shq(filepath.Join(rootfs, "dev")))
	line("mount --bind", shq(rootfs), shq(rootfs))
	for _, m := range mounts {
		src, dst, _ := strings.Cut(m, " ")
		line("mount --bind", shq(src), shq(dst), "&& mount -o remount,bind,ro", shq(dst))
	}
	line("mount -t proc proc", shq(filepath.Join(rootfs, "proc")))
	// /dev as a runtime makes it: a tmpfs with the usual device nodes, and the kubelet's
	// termination message file bound on the container's terminationMessagePath, writable
	// (kuberuntime_container.go, makeMounts: a file of mode 0666 under the pod's directory).
	dev := filepath.Join(rootfs, "dev")
	line("mount -t tmpfs -o mode=755 tmpfs", shq(dev))
	for _, node := range []string{"null", "zero", "random", "urandom"} {
		line("touch", shq(filepath.Join(dev, node)), "&& mount --bind", shq("/dev/"+node), shq(filepath.Join(dev, node)))
	}
	termination := filepath.Join(volumes, "termination-log")
	require.NoError(t, os.WriteFile(termination, nil, 0o666))
	require.NoError(t, os.Chmod(termination, 0o666)) // as the kubelet does, whatever the umask
	if c.TerminationMessagePath != "" {
		dst := filepath.Join(rootfs, c.TerminationMessagePath)
		line("mkdir -p", shq(filepath.Dir(dst)), "&& touch", shq(dst), "&& mount --bind", shq(termination), shq(dst))
	}
	line("mount -o remount,bind,ro", shq(rootfs))
	quoted := make([]string, 0, 1+len(env)+4) // env -i, the environment, chroot and its three arguments
	quoted = append(quoted, "exec /usr/bin/env -i")
	for _, e := range env {
		quoted = append(quoted, shq(e))
	}
	line(append(quoted, "/usr/sbin/chroot", "--userspec="+user, shq(rootfs), `"$@"`)...)

	argv := append(append([]string{}, c.Command...), c.Args...)
	runCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "ip", append([]string{"netns", "exec", lab.Laptop(), "unshare", "-m", "--propagation", "private",
		"/bin/sh", "-c", script.String(), "job"}, argv...)...)
	var run containerRun
	var mu sync.Mutex
	stdout := &streamLog{mu: &mu, lines: &run.Lines, stream: "stdout"}
	stderr := &streamLog{mu: &mu, lines: &run.Lines, stream: "stderr"}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	run.Start = time.Now()
	run.Err = cmd.Run()
	run.End = time.Now()
	stdout.flush()
	stderr.flush()
	t.Logf("the container of %s/%s ran in %s (exit %d)", pod.Namespace, pod.Name, run.End.Sub(run.Start).Round(time.Millisecond), run.ExitCode())
	if run.Err != nil {
		t.Logf("script:\n%s", script.String())
	}
	message, err := os.ReadFile(termination)
	require.NoError(t, err)
	// The kubelet keeps the last 4096 bytes (tail.ReadAtMost, MaxContainerTerminationMessageLength).
	if len(message) > 4096 {
		message = message[len(message)-4096:]
	}
	run.Message = message
	return run
}

func volumeNamed(t *testing.T, pod corev1.Pod, name string) corev1.Volume {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("the pod mounts %s, which it does not declare", name)
	return corev1.Volume{}
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}
