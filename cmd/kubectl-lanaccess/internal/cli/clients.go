package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// clients are the API handles of one run.
type clients struct {
	config   *rest.Config
	typed    client.Interface
	dynamic  dynamic.Interface
	cluster  report.Cluster
	warnings *kube.WarningCollector
	// reads are the lists the API server answered: LA001 does not ask about them again.
	reads *kube.ReadLog
	// namespace is the kubeconfig context's namespace (in a pod, the ServiceAccount's), as
	// kubectl resolves it; "default" when none is set.
	namespace string
	// tape records or replays the run's boundaries (nil: neither).
	tape *tape
}

// newClients builds clients from kubectl's flags (kubeconfig, context, in-cluster config).
func newClients(kubeFlags *kubeFlags, requestTimeout time.Duration) (*clients, error) {
	if err := noKubeconfig(kubeFlags); err != nil {
		return nil, err
	}
	cfg, err := kubeFlags.ToRESTConfig()
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("kubeconfig: %w (set --kubeconfig or --context, or run in a pod)", err)}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = version.UserAgent()
	// doctor makes a fixed, small number of list calls; do not let client-side throttling
	// stretch a diagnosis of a sick cluster.
	cfg.QPS, cfg.Burst = 50, 100
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	w := &kube.WarningCollector{}
	cfg.WarningHandler = w
	reads := &kube.ReadLog{}
	cfg.Wrap(reads.Wrap)
	// Built-in types travel as protobuf: a page of 500 Services decodes in a fraction of the
	// JSON time and memory. The dynamic client (custom resources) and exec keep JSON.
	typedCfg := rest.CopyConfig(cfg)
	typedCfg.ContentType = runtime.ContentTypeProtobuf
	typedCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	typed, err := client.NewForConfig(typedCfg)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("building the client: %w", err)}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("building the dynamic client: %w", err)}
	}
	// Custom resources of API groups the cluster does not serve are not asked for (one
	// discovery question instead of a 404 per group and version tried).
	c := &clients{config: cfg, typed: typed, dynamic: kube.ServedOnly(kube.APIGroups(typed.Discovery()), dyn), warnings: w, reads: reads, cluster: report.Cluster{Server: cfg.Host}}
	if raw, err := kubeFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		c.cluster.Context = raw.CurrentContext
		if kubeFlags.Context() != "" {
			c.cluster.Context = kubeFlags.Context()
		}
	}
	if ns, _, err := kubeFlags.ToRawKubeConfigLoader().Namespace(); err == nil {
		c.namespace = ns
	}
	if c.cluster.Context == "" {
		c.cluster.Context = "(none)"
		if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			c.cluster.Context = "in-cluster"
		}
	}
	return c, nil
}

// noKubeconfig: with no kubeconfig, no --server and not in a pod, client-go would ask
// http://localhost:8080 (cli-runtime's ClusterDefaults, kubectl's historical default) and the
// run would end in "connection refused", exit 3. There is no cluster to ask: that is a
// configuration error, exit 2, with where the kubeconfig was looked for and what works without
// one.
func noKubeconfig(kubeFlags *kubeFlags) error {
	if kubeFlags.Server() != "" {
		return nil
	}
	// rest.InClusterConfig's condition for a pod: the API server's host and port in the
	// environment.
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != "" {
		return nil
	}
	loader := kubeFlags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil || len(raw.Clusters) > 0 || len(raw.Contexts) > 0 {
		return nil // a kubeconfig exists: ToRESTConfig reports what is wrong with it
	}
	where := "~/.kube/config"
	if access := loader.ConfigAccess(); access != nil {
		if paths := access.GetLoadingPrecedence(); len(paths) > 0 {
			where = strings.Join(paths, ", ")
		}
		if access.IsExplicitFile() {
			where = access.GetExplicitFile()
		}
	}
	return &kube.UsageError{
		Message: "no kubeconfig: no cluster configured in " + where + " and not running in a pod",
		Fix:     "set --kubeconfig, KUBECONFIG or --server (kubectl's own flags); without cluster access, doctor --addresses --zone --host and client-check --zone --dns-server check from the flags alone",
	}
}
