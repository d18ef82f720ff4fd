// Package daemon is the lab's long-running process: it plays the container runtime of the kwok
// nodes (podruntime: processes, pod IPs, volumes, sysctls; cniinstall: the CNI DaemonSets'
// install steps), driven by informers on the API. Services are the real kube-proxy's, one per
// node namespace (package kubeproxy, started by labctl).
//
// The seam with bring-up (labctl) is narrow on purpose: labctl starts, finds and stops the
// process through Spec, ProcName and Match, and the daemon gets only the layout and the
// binaries (Config); tests and faults learn what it has acted on through ReadSynced. Neither
// package imports the other's internals: the daemon does not import labctl at all.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/cniinstall"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// ProcName is the daemon's process name (pidfile and log, see procs.Manager).
const ProcName = "lab-daemon"

// Spec is how bring-up starts the daemon: the lab binary's hidden `daemon` command
// (lab/cmd/lab), which calls Run. It runs from the copy of the binary in the state directory,
// since `go run` deletes its own when it exits.
func Spec(l layout.Layout) procs.Spec {
	return procs.Spec{Name: ProcName, Dir: l.StateDir, Argv: []string{l.LabBinary(), "daemon", "--state-dir", l.StateDir}}
}

// Match is what the command line of a running daemon contains (procs.Manager.Pid).
func Match(l layout.Layout) string { return l.LabBinary() + " daemon" }

// Config is all the daemon needs from bring-up.
type Config struct {
	Layout   layout.Layout
	Binaries binaries.Set
	Log      *log.Logger
}

// resync bounds how long a missed event can go unnoticed, and restarts crashed pod processes.
const resync = 5 * time.Second

// Run runs the pod runtime's sync loop until ctx ends.
func Run(ctx context.Context, c Config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Layout.AdminKubeconfig())
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	inf := newInformers(client)
	if err := inf.start(ctx); err != nil {
		return err
	}
	rt, rtInformers := c.runtime(client, inf), inf.runtimeInformers()
	cni := c.cniInstaller(client, inf)
	c.Log.Printf("lab daemon running (pid file %s)", c.Layout.Path("pids", ProcName+".pid"))
	loop(ctx, inf.runtimeKick, func() error {
		return synced(c.Layout, SyncRuntime, rtInformers, func() error { return errors.Join(cni.Reconcile(ctx), rt.Reconcile(ctx)) })
	}, c.Log, "pod runtime")
	return nil
}

// runtime is the pod runtime, reading pods and their volumes' sources from the informers and
// marking a pod started (an annotation the lab's tests and probes wait for) through the API.
func (c Config) runtime(client kubernetes.Interface, inf *informers) *podruntime.Runtime {
	return &podruntime.Runtime{
		Layout: c.Layout, Bins: c.Binaries, Log: c.Log,
		Pods:        func() ([]*corev1.Pod, error) { return inf.pods.Lister().List(labels.Everything()) },
		Cluster:     listerCluster{cms: inf.cms.Lister(), secrets: inf.secrets.Lister(), ings: inf.ings.Lister()},
		MarkStarted: c.markStarted(client, "listening"),
		Token:       podToken(client),
	}
}

// podToken requests a token of a pod's ServiceAccount bound to the pod, as the kubelet does for
// the pod's projected token volume (a day long: the processes that use it read it at start).
func podToken(client kubernetes.Interface) func(ctx context.Context, p *corev1.Pod) ([]byte, error) {
	return func(ctx context.Context, p *corev1.Pod) ([]byte, error) {
		sa := p.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		day := int64(24 * 60 * 60)
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &day,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		}}
		tr, err := client.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return []byte(tr.Status.Token), nil
	}
}

// cniInstaller plays the CNI DaemonSets' install steps (package cniinstall) on the same caches.
func (c Config) cniInstaller(client kubernetes.Interface, inf *informers) *cniinstall.Installer {
	return &cniinstall.Installer{
		Layout: c.Layout, Log: c.Log,
		Pods:        func() ([]*corev1.Pod, error) { return inf.pods.Lister().List(labels.Everything()) },
		Sources:     listerCluster{cms: inf.cms.Lister(), secrets: inf.secrets.Lister(), ings: inf.ings.Lister()},
		MarkStarted: c.markStarted(client, "CNI installed"),
	}
}

// markStarted sets the annotation the lab's kwok stages wait for before making a pod Ready.
func (c Config) markStarted(client kubernetes.Interface, why string) func(ctx context.Context, p *corev1.Pod) error {
	return func(ctx context.Context, p *corev1.Pod) error {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, podruntime.StartedAnnotation)
		_, err := client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil {
			c.Log.Printf("pod %s/%s: %s, marked started", p.Namespace, p.Name, why)
		}
		return err
	}
}
