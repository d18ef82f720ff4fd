package daemon

import (
	"context"
	"fmt"

	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// informers are the daemon's caches of the API, and the channels through which their events
// kick the loop that depends on them.
type informers struct {
	factory kubeinformers.SharedInformerFactory
	pods    coreinformers.PodInformer
	cms     coreinformers.ConfigMapInformer
	secrets coreinformers.SecretInformer
	ings    networkinginformers.IngressInformer

	runtimeKick chan struct{}
}

func newInformers(client kubernetes.Interface) *informers {
	factory := kubeinformers.NewSharedInformerFactory(client, 0)
	return &informers{
		factory: factory,
		pods:    factory.Core().V1().Pods(),
		cms:     factory.Core().V1().ConfigMaps(),
		secrets: factory.Core().V1().Secrets(),
		ings:    factory.Networking().V1().Ingresses(),
		// One pending kick is enough: a loop run reads the whole cache.
		runtimeKick: make(chan struct{}, 1),
	}
}

// runtimeInformers feed the pod runtime. The names are the resources of the sync file (see
// synced).
func (i *informers) runtimeInformers() map[string]cache.SharedIndexInformer {
	return map[string]cache.SharedIndexInformer{"pods": i.pods.Informer(), "configmaps": i.cms.Informer(),
		"secrets": i.secrets.Informer(), "ingresses": i.ings.Informer()}
}

// start registers the kicks, starts the informers and waits until every cache has synced.
func (i *informers) start(ctx context.Context) error {
	for kick, infs := range map[chan struct{}]map[string]cache.SharedIndexInformer{
		i.runtimeKick: i.runtimeInformers(),
	} {
		for _, inf := range infs {
			if _, err := inf.AddEventHandler(kicker(kick)); err != nil {
				return err
			}
		}
	}
	i.factory.Start(ctx.Done())
	for typ, ok := range i.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}
	return nil
}

// kicker is an event handler that signals ch on every event without ever blocking.
func kicker(ch chan struct{}) cache.ResourceEventHandler {
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
