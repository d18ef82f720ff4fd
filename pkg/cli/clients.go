package cli

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// clients are the API handles of one run.
type clients struct {
	config   *rest.Config
	typed    kubernetes.Interface
	dynamic  dynamic.Interface
	cluster  report.Cluster
	warnings *warningCollector
}

// warningCollector keeps the API server's warnings (e.g. the externalIPs deprecation) instead
// of letting client-go print them, so the report can explain them.
type warningCollector struct {
	mu   sync.Mutex
	seen map[string]bool
	list []string
}

func (w *warningCollector) HandleWarningHeader(code int, agent, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if !w.seen[text] {
		w.seen[text] = true
		w.list = append(w.list, text)
	}
}

func (w *warningCollector) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// newClients builds clients from kubectl's flags (kubeconfig, context, in-cluster config).
func newClients(kube *genericclioptions.ConfigFlags, requestTimeout time.Duration) (*clients, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("kubeconfig: %w (set --kubeconfig or --context, or run in a pod)", err)}
	}
	cfg = rest.CopyConfig(cfg)
	// doctor makes a fixed, small number of list calls; do not let client-side throttling
	// stretch a diagnosis of a sick cluster.
	cfg.QPS, cfg.Burst = 50, 100
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	w := &warningCollector{}
	cfg.WarningHandler = w
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("building the client: %w", err)}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("building the dynamic client: %w", err)}
	}
	c := &clients{config: cfg, typed: typed, dynamic: dyn, warnings: w, cluster: report.Cluster{Server: cfg.Host}}
	if raw, err := kube.ToRawKubeConfigLoader().RawConfig(); err == nil {
		c.cluster.Context = raw.CurrentContext
		if kube.Context != nil && *kube.Context != "" {
			c.cluster.Context = *kube.Context
		}
	}
	if c.cluster.Context == "" {
		c.cluster.Context = "in-cluster"
	}
	return c, nil
}
