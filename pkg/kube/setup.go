package kube

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Setup is one read of the cluster: the objects of the LAN-access setup and the context the
// checks need, gathered with a fixed number of list calls (never one GET per object), so the
// cost of doctor does not grow with the cluster.
type Setup struct {
	ProxyService *corev1.Service
	DNSService   *corev1.Service
	// ConfigMap holds the Corefile that the DNS pods mount; CorefileKey names its key.
	ConfigMap   *corev1.ConfigMap
	CorefileKey string
	// Zone is the zone served by the template block (e.g. "apps.example.com."), fully qualified.
	Zone string
	// DNSWorkload is the Deployment whose pods back the DNS Service (nil if none found).
	DNSWorkload *appsv1.Deployment
	DNSPods     []corev1.Pod
	ProxyPods   []corev1.Pod
	Nodes       []corev1.Node
	// EndpointSlices by Service "namespace/name".
	EndpointSlices map[string][]discoveryv1.EndpointSlice
	// PDBs in the DNS and proxy namespaces.
	PDBs []policyv1.PodDisruptionBudget
	// Services is every Service the caller may list (cluster-wide when permitted), used to find
	// other Services claiming our addresses.
	Services []corev1.Service
	// Ingresses and IngressRoutes (traefik.io or traefik.containo.us, unstructured) give the
	// routes for the probe host and the audience check.
	Ingresses     []networkingv1.Ingress
	IngressRoutes []unstructured.Unstructured
	// Middlewares (Traefik) referenced by routes, unstructured.
	Middlewares []unstructured.Unstructured
	// Warnings the API server returned while we read (e.g. the externalIPs deprecation).
	APIWarnings []string
	// Partial lists what could not be read and why (e.g. forbidden), so checks can SKIP with
	// the reason rather than guess.
	Partial map[string]error
}
