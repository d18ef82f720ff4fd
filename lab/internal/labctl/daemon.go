package labctl

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// resync bounds how long a missed event can go unnoticed, and restarts crashed pod processes.
const resync = 5 * time.Second

// RunDaemon runs the lab's sync loops until ctx ends: the pod runtime (processes, pod IPs,
// volumes, sysctls) and kube-proxy (DNAT rules), both driven by informers on the API.
func RunDaemon(ctx context.Context, l layout.Layout, logger *log.Logger) error {
	st, err := LoadState(l)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods()
	svcs := factory.Core().V1().Services()
	slices := factory.Discovery().V1().EndpointSlices()
	cms := factory.Core().V1().ConfigMaps()
	secrets := factory.Core().V1().Secrets()
	ings := factory.Networking().V1().Ingresses()

	runtimeKick := make(chan struct{}, 1)
	proxyKick := make(chan struct{}, 1)
	kick := func(ch chan struct{}) cache.ResourceEventHandler {
		f := func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		return cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { f() }, UpdateFunc: func(any, any) { f() }, DeleteFunc: func(any) { f() },
		}
	}
	for _, inf := range []cache.SharedIndexInformer{pods.Informer(), cms.Informer(), secrets.Informer(), ings.Informer()} {
		if _, err := inf.AddEventHandler(kick(runtimeKick)); err != nil {
			return err
		}
	}
	for _, inf := range []cache.SharedIndexInformer{svcs.Informer(), slices.Informer()} {
		if _, err := inf.AddEventHandler(kick(proxyKick)); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}

	rt := &podruntime.Runtime{
		Layout: l, Bins: st.Binaries, Log: logger,
		Pods:    func() ([]*corev1.Pod, error) { return pods.Lister().List(labels.Everything()) },
		Cluster: listerCluster{cms: cms.Lister(), secrets: secrets.Lister(), ings: ings.Lister()},
		MarkStarted: func(ctx context.Context, p *corev1.Pod) error {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, podruntime.StartedAnnotation)
			_, err := client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err == nil {
				logger.Printf("pod %s/%s: listening, marked started", p.Namespace, p.Name)
			}
			return err
		},
	}
	var nodeNames []string
	for _, n := range l.Nodes {
		nodeNames = append(nodeNames, n.NS)
	}
	px := &kubeproxy.Proxy{
		Nodes: nodeNames, Log: logger,
		Services: func() ([]*corev1.Service, error) { return svcs.Lister().List(labels.Everything()) },
		Slices: func() ([]*discoveryv1.EndpointSlice, error) {
			return slices.Lister().List(labels.Everything())
		},
	}
	logger.Printf("lab daemon running (pid file %s)", l.Path("pids", ProcDaemon+".pid"))
	proxyInformers := map[string]cache.SharedIndexInformer{"services": svcs.Informer(), "endpointslices": slices.Informer()}
	runtimeInformers := map[string]cache.SharedIndexInformer{"pods": pods.Informer(), "configmaps": cms.Informer(),
		"secrets": secrets.Informer(), "ingresses": ings.Informer()}
	go loop(ctx, proxyKick, func() error {
		return synced(l, SyncProxy, proxyInformers, func() error { return px.Sync(ctx) })
	}, logger, "kube-proxy")
	loop(ctx, runtimeKick, func() error {
		return synced(l, SyncRuntime, runtimeInformers, func() error { return rt.Reconcile(ctx) })
	}, logger, "pod runtime")
	return nil
}

// Names of the files where each loop records what it has acted on.
const (
	SyncRuntime = "runtime.synced"
	SyncProxy   = "proxy.synced"
)

// synced runs fn and, if it succeeded, records per resource the highest resourceVersion that
// was in the cache when fn started: a waiter that wrote an object at version V knows the loop
// acted on it once the record for that resource reaches V (versions are etcd revisions).
func synced(l layout.Layout, file string, infs map[string]cache.SharedIndexInformer, fn func() error) error {
	seen := map[string]uint64{}
	for name, inf := range infs {
		for _, obj := range inf.GetStore().List() {
			if m, ok := obj.(metav1.Object); ok {
				if v, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64); err == nil && v > seen[name] {
					seen[name] = v
				}
			}
		}
	}
	if err := fn(); err != nil {
		return err
	}
	b, err := json.Marshal(seen)
	if err != nil {
		return err
	}
	tmp := l.Path(file + ".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, l.Path(file))
}

// ReadSynced returns what a loop recorded (see synced).
func ReadSynced(l layout.Layout, file string) (map[string]uint64, error) {
	b, err := os.ReadFile(l.Path(file))
	if err != nil {
		return nil, err
	}
	var m map[string]uint64
	return m, json.Unmarshal(b, &m)
}

// loop runs fn on every kick (coalesced over 100 ms) and every resync period.
func loop(ctx context.Context, kick <-chan struct{}, fn func() error, logger *log.Logger, name string) {
	tick := time.NewTicker(resync)
	defer tick.Stop()
	last := ""
	for {
		err := fn()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != last && msg != "" {
			logger.Printf("%s: %v", name, err)
		}
		last = msg
		select {
		case <-ctx.Done():
			return
		case <-kick:
			time.Sleep(100 * time.Millisecond)
		case <-tick.C:
		}
	}
}

// listerCluster serves the runtime's reads from the informer caches.
type listerCluster struct {
	cms     corelisters.ConfigMapLister
	secrets corelisters.SecretLister
	ings    networkinglisters.IngressLister
}

func (c listerCluster) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	return c.cms.ConfigMaps(ns).Get(name)
}

func (c listerCluster) Secret(ns, name string) (*corev1.Secret, error) {
	return c.secrets.Secrets(ns).Get(name)
}

func (c listerCluster) Ingresses() ([]*networkingv1.Ingress, error) {
	return c.ings.List(labels.Everything())
}
