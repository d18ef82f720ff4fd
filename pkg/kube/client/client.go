// Package client is the plugin's Kubernetes API client: the API groups, resources and methods
// the plugin calls, and nothing else.
//
// client-go's kubernetes.Interface builds a client for every API group client-go knows (about
// 50), and each group's typed package imports k8s.io/client-go/kubernetes/scheme, which
// registers every group's types: issue 27 measured 8 MB of k8s.io/api and 1.3 MB of apply
// configurations in the release binary for them, and their registration at every start. The
// interfaces here mirror client-go's shapes (CoreV1().Pods(ns).List(ctx, opts)) with client-go's
// exact method signatures, so that client-go's typed resource clients satisfy them and
// clientgo.Wrap adapts a client-go clientset (the fake one in tests) with no behaviour of its own.
package client

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// Interface is the plugin's clientset: the API groups it reads, and the server's discovery.
type Interface interface {
	Discovery() DiscoveryInterface
	AdmissionregistrationV1() AdmissionregistrationV1Interface
	AppsV1() AppsV1Interface
	AuthorizationV1() AuthorizationV1Interface
	CoreV1() CoreV1Interface
	DiscoveryV1() DiscoveryV1Interface
	NetworkingV1() NetworkingV1Interface
	PolicyV1() PolicyV1Interface
}

// DiscoveryInterface answers the two discovery questions the plugin asks.
type DiscoveryInterface interface {
	// ServerVersion is the server's GET /version.
	ServerVersion() (*version.Info, error)
	// ServerGroups are the API groups and versions the server serves (GET /apis).
	ServerGroups() (*metav1.APIGroupList, error)
}

// AdmissionregistrationV1Interface reads webhooks and ValidatingAdmissionPolicies (LA106).
type AdmissionregistrationV1Interface interface {
	ValidatingWebhookConfigurations() ValidatingWebhookConfigurationInterface
	ValidatingAdmissionPolicies() ValidatingAdmissionPolicyInterface
	ValidatingAdmissionPolicyBindings() ValidatingAdmissionPolicyBindingInterface
}

// ValidatingWebhookConfigurationInterface is the subset of client-go's that the plugin calls.
type ValidatingWebhookConfigurationInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*admissionregistrationv1.ValidatingWebhookConfigurationList, error)
}

// ValidatingAdmissionPolicyInterface is the subset of client-go's that the plugin calls.
type ValidatingAdmissionPolicyInterface = GetLister[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyList]

// ValidatingAdmissionPolicyBindingInterface is the subset of client-go's that the plugin calls.
type ValidatingAdmissionPolicyBindingInterface = GetLister[*admissionregistrationv1.ValidatingAdmissionPolicyBinding, *admissionregistrationv1.ValidatingAdmissionPolicyBindingList]

// AppsV1Interface reads Deployments, DaemonSets and ReplicaSets.
type AppsV1Interface interface {
	DaemonSets(namespace string) DaemonSetInterface
	Deployments(namespace string) DeploymentInterface
	ReplicaSets(namespace string) ReplicaSetInterface
}

// DaemonSetInterface is the subset of client-go's that the plugin calls.
type DaemonSetInterface = GetLister[*appsv1.DaemonSet, *appsv1.DaemonSetList]

// DeploymentInterface is the subset of client-go's that the plugin calls.
type DeploymentInterface = GetLister[*appsv1.Deployment, *appsv1.DeploymentList]

// ReplicaSetInterface is the subset of client-go's that the plugin calls.
type ReplicaSetInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.ReplicaSet, error)
}

// AuthorizationV1Interface asks access and rules reviews (LA001).
type AuthorizationV1Interface interface {
	SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface
	SelfSubjectRulesReviews() SelfSubjectRulesReviewInterface
}

// SelfSubjectAccessReviewInterface is the subset of client-go's that the plugin calls.
type SelfSubjectAccessReviewInterface interface {
	Create(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}

// SelfSubjectRulesReviewInterface is the subset of client-go's that the plugin calls.
type SelfSubjectRulesReviewInterface interface {
	Create(ctx context.Context, review *authorizationv1.SelfSubjectRulesReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectRulesReview, error)
}

// CoreV1Interface reads and, for the helper pods and fixes, writes the core group.
type CoreV1Interface interface {
	// RESTClient is the core group's REST client (pods/exec, the node proxy).
	RESTClient() rest.Interface
	ConfigMaps(namespace string) ConfigMapInterface
	Events(namespace string) EventInterface
	Namespaces() NamespaceInterface
	Nodes() NodeInterface
	Pods(namespace string) PodInterface
	Services(namespace string) ServiceInterface
}

// ConfigMapInterface is the subset of client-go's that the plugin calls.
type ConfigMapInterface = GetLister[*corev1.ConfigMap, *corev1.ConfigMapList]

// EventInterface is the subset of client-go's that the plugin calls.
type EventInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error)
}

// NamespaceInterface is the subset of client-go's that the plugin calls.
type NamespaceInterface = GetLister[*corev1.Namespace, *corev1.NamespaceList]

// NodeInterface is the subset of client-go's that the plugin calls.
type NodeInterface = GetLister[*corev1.Node, *corev1.NodeList]

// PodInterface is the subset of client-go's that the plugin calls.
type PodInterface interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

// ServiceInterface is the subset of client-go's that the plugin calls.
type ServiceInterface = GetLister[*corev1.Service, *corev1.ServiceList]

// DiscoveryV1Interface reads EndpointSlices.
type DiscoveryV1Interface interface {
	EndpointSlices(namespace string) EndpointSliceInterface
}

// EndpointSliceInterface is the subset of client-go's that the plugin calls.
type EndpointSliceInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*discoveryv1.EndpointSliceList, error)
}

// NetworkingV1Interface reads Ingresses, IngressClasses, NetworkPolicies and ServiceCIDRs.
type NetworkingV1Interface interface {
	IngressClasses() IngressClassInterface
	Ingresses(namespace string) IngressInterface
	NetworkPolicies(namespace string) NetworkPolicyInterface
	ServiceCIDRs() ServiceCIDRInterface
}

// IngressClassInterface is the subset of client-go's that the plugin calls.
type IngressClassInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*networkingv1.IngressClassList, error)
}

// IngressInterface is the subset of client-go's that the plugin calls.
type IngressInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*networkingv1.IngressList, error)
}

// NetworkPolicyInterface is the subset of client-go's that the plugin calls.
type NetworkPolicyInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*networkingv1.NetworkPolicyList, error)
}

// ServiceCIDRInterface is the subset of client-go's that the plugin calls.
type ServiceCIDRInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*networkingv1.ServiceCIDRList, error)
}

// PolicyV1Interface reads PodDisruptionBudgets.
type PolicyV1Interface interface {
	PodDisruptionBudgets(namespace string) PodDisruptionBudgetInterface
}

// PodDisruptionBudgetInterface is the subset of client-go's that the plugin calls.
type PodDisruptionBudgetInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*policyv1.PodDisruptionBudgetList, error)
}

// GetLister is a resource client that gets and lists: the shape most of the plugin's reads
// take (client-go's typed interfaces have these methods, so they satisfy it as they are).
type GetLister[T, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}
