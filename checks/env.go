// Package checks is the catalogue: one small file per check, each a constructor that takes the
// environment and returns an engine.Check. suite.go lists the order.
package checks

import (
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// Env is everything a check may use. It is built once per run by the cli package; checks never
// print and never write to user objects.
type Env struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Setup   *kube.Setup
	Options Options
	Facts   *Facts
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
