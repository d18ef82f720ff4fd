package client

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/rest"
)

// The groups' resources, each built as client-go's generated new<Resource>s builds it
// (client-go v0.37.2, kubernetes/typed/<group>/<version>/<resource>.go): the resource's plural,
// the group's REST client, the namespace ("" for a cluster-scoped resource) and protobuf
// preferred.

type admissionregistrationV1Client struct{ rc rest.Interface }

func (c admissionregistrationV1Client) ValidatingWebhookConfigurations() ValidatingWebhookConfigurationInterface {
	return resource(c.rc, "validatingwebhookconfigurations", "",
		func() *admissionregistrationv1.ValidatingWebhookConfiguration {
			return &admissionregistrationv1.ValidatingWebhookConfiguration{}
		},
		func() *admissionregistrationv1.ValidatingWebhookConfigurationList {
			return &admissionregistrationv1.ValidatingWebhookConfigurationList{}
		})
}

func (c admissionregistrationV1Client) ValidatingAdmissionPolicies() ValidatingAdmissionPolicyInterface {
	return resource(c.rc, "validatingadmissionpolicies", "",
		func() *admissionregistrationv1.ValidatingAdmissionPolicy {
			return &admissionregistrationv1.ValidatingAdmissionPolicy{}
		},
		func() *admissionregistrationv1.ValidatingAdmissionPolicyList {
			return &admissionregistrationv1.ValidatingAdmissionPolicyList{}
		})
}

func (c admissionregistrationV1Client) ValidatingAdmissionPolicyBindings() ValidatingAdmissionPolicyBindingInterface {
	return resource(c.rc, "validatingadmissionpolicybindings", "",
		func() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		},
		func() *admissionregistrationv1.ValidatingAdmissionPolicyBindingList {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}
		})
}

type appsV1Client struct{ rc rest.Interface }

func (c appsV1Client) DaemonSets(namespace string) DaemonSetInterface {
	return resource(c.rc, "daemonsets", namespace,
		func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
		func() *appsv1.DaemonSetList { return &appsv1.DaemonSetList{} })
}

func (c appsV1Client) Deployments(namespace string) DeploymentInterface {
	return resource(c.rc, "deployments", namespace,
		func() *appsv1.Deployment { return &appsv1.Deployment{} },
		func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })
}

func (c appsV1Client) ReplicaSets(namespace string) ReplicaSetInterface {
	return resource(c.rc, "replicasets", namespace,
		func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} },
		func() *appsv1.ReplicaSetList { return &appsv1.ReplicaSetList{} })
}

type authorizationV1Client struct{ rc rest.Interface }

// The reviews are create-only (gentype.NewClient, as client-go builds them; typed.go).
func (c authorizationV1Client) SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface {
	return newTyped(c.rc, "selfsubjectaccessreviews", "",
		func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} })
}

func (c authorizationV1Client) SelfSubjectRulesReviews() SelfSubjectRulesReviewInterface {
	return newTyped(c.rc, "selfsubjectrulesreviews", "",
		func() *authorizationv1.SelfSubjectRulesReview { return &authorizationv1.SelfSubjectRulesReview{} })
}

type coreV1Client struct{ rc rest.Interface }

func (c coreV1Client) RESTClient() rest.Interface { return c.rc }

func (c coreV1Client) ConfigMaps(namespace string) ConfigMapInterface {
	return resource(c.rc, "configmaps", namespace,
		func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (c coreV1Client) Events(namespace string) EventInterface {
	return resource(c.rc, "events", namespace,
		func() *corev1.Event { return &corev1.Event{} },
		func() *corev1.EventList { return &corev1.EventList{} })
}

func (c coreV1Client) Namespaces() NamespaceInterface {
	return resource(c.rc, "namespaces", "",
		func() *corev1.Namespace { return &corev1.Namespace{} },
		func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (c coreV1Client) Nodes() NodeInterface {
	return resource(c.rc, "nodes", "",
		func() *corev1.Node { return &corev1.Node{} },
		func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (c coreV1Client) Pods(namespace string) PodInterface {
	return resource(c.rc, "pods", namespace,
		func() *corev1.Pod { return &corev1.Pod{} },
		func() *corev1.PodList { return &corev1.PodList{} })
}

func (c coreV1Client) Services(namespace string) ServiceInterface {
	return resource(c.rc, "services", namespace,
		func() *corev1.Service { return &corev1.Service{} },
		func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

type discoveryV1Client struct{ rc rest.Interface }

func (c discoveryV1Client) EndpointSlices(namespace string) EndpointSliceInterface {
	return resource(c.rc, "endpointslices", namespace,
		func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} },
		func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} })
}

type networkingV1Client struct{ rc rest.Interface }

func (c networkingV1Client) IngressClasses() IngressClassInterface {
	return resource(c.rc, "ingressclasses", "",
		func() *networkingv1.IngressClass { return &networkingv1.IngressClass{} },
		func() *networkingv1.IngressClassList { return &networkingv1.IngressClassList{} })
}

func (c networkingV1Client) Ingresses(namespace string) IngressInterface {
	return resource(c.rc, "ingresses", namespace,
		func() *networkingv1.Ingress { return &networkingv1.Ingress{} },
		func() *networkingv1.IngressList { return &networkingv1.IngressList{} })
}

func (c networkingV1Client) NetworkPolicies(namespace string) NetworkPolicyInterface {
	return resource(c.rc, "networkpolicies", namespace,
		func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} },
		func() *networkingv1.NetworkPolicyList { return &networkingv1.NetworkPolicyList{} })
}

func (c networkingV1Client) ServiceCIDRs() ServiceCIDRInterface {
	return resource(c.rc, "servicecidrs", "",
		func() *networkingv1.ServiceCIDR { return &networkingv1.ServiceCIDR{} },
		func() *networkingv1.ServiceCIDRList { return &networkingv1.ServiceCIDRList{} })
}

type policyV1Client struct{ rc rest.Interface }

func (c policyV1Client) PodDisruptionBudgets(namespace string) PodDisruptionBudgetInterface {
	return resource(c.rc, "poddisruptionbudgets", namespace,
		func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} },
		func() *policyv1.PodDisruptionBudgetList { return &policyv1.PodDisruptionBudgetList{} })
}
