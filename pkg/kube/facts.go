package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ProxyFacts are read around the proxy and the admission of Services: the Gateway API objects, the namespaces (their labels, for the namespace
// selectors of admission policies) and the API server's admission flags.
type ProxyFacts struct {
	// GatewayClasses, Gateways and HTTPRoutes (Gateway API, unstructured), and the
	// ReferenceGrants that let a route or a Gateway name an object of another namespace.
	GatewayClasses  []unstructured.Unstructured
	Gateways        []unstructured.Unstructured
	HTTPRoutes      []unstructured.Unstructured
	ReferenceGrants []unstructured.Unstructured
	// Namespaces of the cluster, when readable.
	Namespaces []corev1.Namespace
	// APIServer is what the kube-apiserver's flags say about admission, when its pod is
	// visible (kubeadm's static pod in kube-system).
	APIServer APIServerFlags
}
