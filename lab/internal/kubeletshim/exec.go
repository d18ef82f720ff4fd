package kubeletshim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// The kubelet's limits on an exec stream (pkg/kubelet/server: the streaming defaults).
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

type execHandler struct {
	cfg    Config
	client kubernetes.Interface
}

// ServeHTTP handles /exec/{namespace}/{pod}/{container} and
// /exec/{namespace}/{pod}/{uid}/{container}, the kubelet's exec paths.
func (h *execHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(req.URL.Path, "/exec/"), "/"), "/")
	if len(parts) != 3 && len(parts) != 4 {
		http.Error(w, "want /exec/{namespace}/{pod}[/{uid}]/{container}", http.StatusNotFound)
		return
	}
	namespace, name, container := parts[0], parts[1], parts[len(parts)-1]
	ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
	pod, err := h.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		http.Error(w, fmt.Sprintf("pod %s/%s not found", namespace, name), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case len(parts) == 4 && string(pod.UID) != parts[2]:
		http.Error(w, fmt.Sprintf("pod %s/%s has another UID", namespace, name), http.StatusNotFound)
		return
	}
	tgt, err := h.target(req.Context(), pod, container)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	opts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.cfg.Log.Printf("exec in %s/%s container %s (network namespace %s, %d volumes mounted): %q", namespace, name, container, tgt.netNS, len(tgt.binds), req.URL.Query()["command"])
	remotecommand.ServeExec(w, req, tgt, namespace+"/"+name, string(pod.UID), container, req.URL.Query()["command"], opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// target is where a container's commands run.
type target struct {
	netNS   string
	binds   []Bind
	root    string
	labProg string
}

// target finds the pod's network namespace and the hostPath volumes its container mounts.
func (h *execHandler) target(ctx context.Context, pod *corev1.Pod, container string) (*target, error) {
	c := findContainer(pod, container)
	if c == nil {
		return nil, fmt.Errorf("container %q not found in pod %s/%s", container, pod.Namespace, pod.Name)
	}
	t := &target{netNS: h.cfg.Node.NS, root: scratchRoot(h.cfg.Layout), labProg: h.cfg.Layout.LabBinary()}
	if !pod.Spec.HostNetwork && podruntime.OwnNamespace(h.cfg.Node, pod) {
		t.netNS = podruntime.PodNetNS(pod.UID)
		ok, err := netns.Exists(ctx, t.netNS)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("pod %s/%s has no network namespace yet (%s): its sandbox is not ready", pod.Namespace, pod.Name, t.netNS)
		}
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for _, m := range c.VolumeMounts {
		src, ok := hostPaths[m.Name]
		if !ok || m.SubPath != "" {
			continue
		}
		src, err := h.hostDir(src)
		if err != nil {
			return nil, err
		}
		t.binds = append(t.binds, Bind{Source: src, Target: filepath.Clean(m.MountPath)})
	}
	return t, nil
}

// hostDir is where a hostPath lives on this lab node: the node's own copy for the directories
// each lab node has (layout.NodeHostPath), the machine's path otherwise.
func (h *execHandler) hostDir(path string) (string, error) {
	if dir, ok := h.cfg.Layout.NodeHostPath(h.cfg.Node.NS, path); ok {
		return dir, os.MkdirAll(dir, 0o755)
	}
	return filepath.Clean(path), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// ExecInContainer runs cmd in the target's namespaces (remotecommand.Executor).
func (t *target) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if tty {
		return errors.New("the lab's kubelet does not serve terminals: run the command without -t")
	}
	if len(cmd) == 0 {
		return errors.New("no command")
	}
	// The runtime's own words when the image lacks the program (what kwok answers too): the
	// pod's programs are the machine's, the volumes add none.
	if _, err := exec.LookPath(cmd[0]); err != nil {
		return err
	}
	argv := append([]string{"ip", "netns", "exec", t.netNS}, cmd...)
	if len(t.binds) > 0 {
		argv = append([]string{"ip", "netns", "exec", t.netNS, t.labProg, ContainerExecCommand, "--root", t.root}, bindFlags(t.binds)...)
		argv = append(append(argv, "--"), cmd...)
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // the command the API server asked the kubelet to run, in the pod's namespaces
	if in != nil {
		c.Stdin = in
	}
	c.Stdout, c.Stderr = out, errOut
	// A client that keeps its stdin open must not hold the answer once the command is done.
	c.WaitDelay = time.Second
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return err
}

// scratchRoot is the directory each exec with volumes mounts its root on, in its own mount
// namespace.
func scratchRoot(l layout.Layout) string { return l.Path("exec-root") }
