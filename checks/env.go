// Package checks is the catalogue: one small file per check, each a constructor that takes the
// environment and returns an engine.Check. suite.go lists the order.
package checks

import (
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// Env is everything a check may use. It is built once per run by the cli package; checks never
// print and never write to user objects.
type Env struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Setup   *kube.Setup
	Options Options
	Facts   *Facts
	// Probes asks the network (DNS, pinned HTTPS, system resolver) for LA301-LA403; one Set per
	// run, so that a dead address costs one timeout across all checks.
	Probes *probe.Set
	// Exec runs commands in pods (VPN001-VPN006); Helpers gives a shell in a node's network
	// namespace (LA201): an existing hostNetwork pod or a labelled helper pod. The cli closes
	// Helpers at the end of the run, which deletes any helper still present.
	Exec    kube.Executor
	Helpers *kube.NodeShells
}

// Options are the user's settings that checks read (flags or --config).
type Options struct {
	// ProbeHost is the name asked for in DNS and HTTPS probes; empty = discovered.
	ProbeHost string
	// OutsideName must resolve through the '.' block (LA303).
	OutsideName string
	// ProbeTimeout bounds each network step.
	ProbeTimeout   time.Duration
	ExpectStatus   int
	ExpectLocation string
	Insecure       bool
	CAFile         string
	NoHelpers      bool
	Image          string
	// HelperNamespace receives helper pods (--helper-namespace); it must admit hostNetwork.
	HelperNamespace string
	// vpn-trace: Selector (-l/--selector) picks the VPN pods, else pods running an OpenVPN
	// image or container; Namespace limits the search ("" = all namespaces, set only when -n
	// was given); Public is a public address (IP or host:port) for the last hop (--public);
	// FromClient also walks the ladder from this machine through the tunnel (--from-client);
	// HopTimeout bounds each hop (default 2 s).
	Selector   string
	Namespace  string
	Public     string
	FromClient bool
	HopTimeout time.Duration
	// ClusterDNS (--cluster-dns) and PodTarget (--pod-target, IP or IP:port) name the ladder's
	// VIP and pod hops when discovery (Service kube-system/kube-dns and its endpoints) cannot.
	ClusterDNS string
	PodTarget  string
}

// Facts are values found by earlier checks and read by later ones (guarded: checks may run
// concurrently once their dependencies finished).
type Facts struct {
	mu     sync.Mutex
	values map[string]any
}

// Set records a fact.
func (f *Facts) Set(key string, v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.values == nil {
		f.values = map[string]any{}
	}
	f.values[key] = v
}

// Get returns a fact and whether it was set.
func (f *Facts) Get(key string) (any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.values[key]
	return v, ok
}
