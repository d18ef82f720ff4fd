package daemon

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
)

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
