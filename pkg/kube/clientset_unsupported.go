package kube

// The API groups of kubernetes.Interface (client-go v0.37.2) that Clientset does not build: each
// panics naming itself (unsupportedGroup). A group a newer client-go adds breaks the build at
// Clientset's interface assertion, so that it is added here or built.

import (
	admissionregistrationv1alpha1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1beta1"
	internalv1alpha1 "k8s.io/client-go/kubernetes/typed/apiserverinternal/v1alpha1"
	appsv1beta1 "k8s.io/client-go/kubernetes/typed/apps/v1beta1"
	appsv1beta2 "k8s.io/client-go/kubernetes/typed/apps/v1beta2"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authenticationv1alpha1 "k8s.io/client-go/kubernetes/typed/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/client-go/kubernetes/typed/authentication/v1beta1"
	authorizationv1beta1 "k8s.io/client-go/kubernetes/typed/authorization/v1beta1"
	autoscalingv1 "k8s.io/client-go/kubernetes/typed/autoscaling/v1"
	autoscalingv2 "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	batchv1beta1 "k8s.io/client-go/kubernetes/typed/batch/v1beta1"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certificatesv1alpha1 "k8s.io/client-go/kubernetes/typed/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/client-go/kubernetes/typed/certificates/v1beta1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coordinationv1alpha2 "k8s.io/client-go/kubernetes/typed/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/client-go/kubernetes/typed/coordination/v1beta1"
	discoveryv1beta1 "k8s.io/client-go/kubernetes/typed/discovery/v1beta1"
	eventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	eventsv1beta1 "k8s.io/client-go/kubernetes/typed/events/v1beta1"
	extensionsv1beta1 "k8s.io/client-go/kubernetes/typed/extensions/v1beta1"
	flowcontrolv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta3"
	lifecyclev1alpha1 "k8s.io/client-go/kubernetes/typed/lifecycle/v1alpha1"
	networkingv1beta1 "k8s.io/client-go/kubernetes/typed/networking/v1beta1"
	nodev1 "k8s.io/client-go/kubernetes/typed/node/v1"
	nodev1alpha1 "k8s.io/client-go/kubernetes/typed/node/v1alpha1"
	nodev1beta1 "k8s.io/client-go/kubernetes/typed/node/v1beta1"
	policyv1beta1 "k8s.io/client-go/kubernetes/typed/policy/v1beta1"
	rbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbacv1alpha1 "k8s.io/client-go/kubernetes/typed/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/client-go/kubernetes/typed/rbac/v1beta1"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	resourcev1alpha3 "k8s.io/client-go/kubernetes/typed/resource/v1alpha3"
	resourcev1beta1 "k8s.io/client-go/kubernetes/typed/resource/v1beta1"
	resourcev1beta2 "k8s.io/client-go/kubernetes/typed/resource/v1beta2"
	schedulingv1 "k8s.io/client-go/kubernetes/typed/scheduling/v1"
	schedulingv1alpha3 "k8s.io/client-go/kubernetes/typed/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/client-go/kubernetes/typed/scheduling/v1beta1"
	storagev1 "k8s.io/client-go/kubernetes/typed/storage/v1"
	storagev1alpha1 "k8s.io/client-go/kubernetes/typed/storage/v1alpha1"
	storagev1beta1 "k8s.io/client-go/kubernetes/typed/storage/v1beta1"
	storagemigrationv1 "k8s.io/client-go/kubernetes/typed/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/client-go/kubernetes/typed/storagemigration/v1beta1"
)

// AdmissionregistrationV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) AdmissionregistrationV1alpha1() admissionregistrationv1alpha1.AdmissionregistrationV1alpha1Interface {
	panic(unsupportedGroup("AdmissionregistrationV1alpha1"))
}

// AdmissionregistrationV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) AdmissionregistrationV1beta1() admissionregistrationv1beta1.AdmissionregistrationV1beta1Interface {
	panic(unsupportedGroup("AdmissionregistrationV1beta1"))
}

// InternalV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) InternalV1alpha1() internalv1alpha1.InternalV1alpha1Interface {
	panic(unsupportedGroup("InternalV1alpha1"))
}

// AppsV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) AppsV1beta1() appsv1beta1.AppsV1beta1Interface {
	panic(unsupportedGroup("AppsV1beta1"))
}

// AppsV1beta2 is not built: see unsupportedGroups.
func (unsupportedGroups) AppsV1beta2() appsv1beta2.AppsV1beta2Interface {
	panic(unsupportedGroup("AppsV1beta2"))
}

// AuthenticationV1 is not built: see unsupportedGroups.
func (unsupportedGroups) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	panic(unsupportedGroup("AuthenticationV1"))
}

// AuthenticationV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) AuthenticationV1alpha1() authenticationv1alpha1.AuthenticationV1alpha1Interface {
	panic(unsupportedGroup("AuthenticationV1alpha1"))
}

// AuthenticationV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) AuthenticationV1beta1() authenticationv1beta1.AuthenticationV1beta1Interface {
	panic(unsupportedGroup("AuthenticationV1beta1"))
}

// AuthorizationV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) AuthorizationV1beta1() authorizationv1beta1.AuthorizationV1beta1Interface {
	panic(unsupportedGroup("AuthorizationV1beta1"))
}

// AutoscalingV1 is not built: see unsupportedGroups.
func (unsupportedGroups) AutoscalingV1() autoscalingv1.AutoscalingV1Interface {
	panic(unsupportedGroup("AutoscalingV1"))
}

// AutoscalingV2 is not built: see unsupportedGroups.
func (unsupportedGroups) AutoscalingV2() autoscalingv2.AutoscalingV2Interface {
	panic(unsupportedGroup("AutoscalingV2"))
}

// BatchV1 is not built: see unsupportedGroups.
func (unsupportedGroups) BatchV1() batchv1.BatchV1Interface { panic(unsupportedGroup("BatchV1")) }

// BatchV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) BatchV1beta1() batchv1beta1.BatchV1beta1Interface {
	panic(unsupportedGroup("BatchV1beta1"))
}

// CertificatesV1 is not built: see unsupportedGroups.
func (unsupportedGroups) CertificatesV1() certificatesv1.CertificatesV1Interface {
	panic(unsupportedGroup("CertificatesV1"))
}

// CertificatesV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) CertificatesV1beta1() certificatesv1beta1.CertificatesV1beta1Interface {
	panic(unsupportedGroup("CertificatesV1beta1"))
}

// CertificatesV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) CertificatesV1alpha1() certificatesv1alpha1.CertificatesV1alpha1Interface {
	panic(unsupportedGroup("CertificatesV1alpha1"))
}

// CoordinationV1alpha2 is not built: see unsupportedGroups.
func (unsupportedGroups) CoordinationV1alpha2() coordinationv1alpha2.CoordinationV1alpha2Interface {
	panic(unsupportedGroup("CoordinationV1alpha2"))
}

// CoordinationV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) CoordinationV1beta1() coordinationv1beta1.CoordinationV1beta1Interface {
	panic(unsupportedGroup("CoordinationV1beta1"))
}

// CoordinationV1 is not built: see unsupportedGroups.
func (unsupportedGroups) CoordinationV1() coordinationv1.CoordinationV1Interface {
	panic(unsupportedGroup("CoordinationV1"))
}

// DiscoveryV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) DiscoveryV1beta1() discoveryv1beta1.DiscoveryV1beta1Interface {
	panic(unsupportedGroup("DiscoveryV1beta1"))
}

// EventsV1 is not built: see unsupportedGroups.
func (unsupportedGroups) EventsV1() eventsv1.EventsV1Interface { panic(unsupportedGroup("EventsV1")) }

// EventsV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) EventsV1beta1() eventsv1beta1.EventsV1beta1Interface {
	panic(unsupportedGroup("EventsV1beta1"))
}

// ExtensionsV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) ExtensionsV1beta1() extensionsv1beta1.ExtensionsV1beta1Interface {
	panic(unsupportedGroup("ExtensionsV1beta1"))
}

// FlowcontrolV1 is not built: see unsupportedGroups.
func (unsupportedGroups) FlowcontrolV1() flowcontrolv1.FlowcontrolV1Interface {
	panic(unsupportedGroup("FlowcontrolV1"))
}

// FlowcontrolV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) FlowcontrolV1beta1() flowcontrolv1beta1.FlowcontrolV1beta1Interface {
	panic(unsupportedGroup("FlowcontrolV1beta1"))
}

// FlowcontrolV1beta2 is not built: see unsupportedGroups.
func (unsupportedGroups) FlowcontrolV1beta2() flowcontrolv1beta2.FlowcontrolV1beta2Interface {
	panic(unsupportedGroup("FlowcontrolV1beta2"))
}

// FlowcontrolV1beta3 is not built: see unsupportedGroups.
func (unsupportedGroups) FlowcontrolV1beta3() flowcontrolv1beta3.FlowcontrolV1beta3Interface {
	panic(unsupportedGroup("FlowcontrolV1beta3"))
}

// LifecycleV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) LifecycleV1alpha1() lifecyclev1alpha1.LifecycleV1alpha1Interface {
	panic(unsupportedGroup("LifecycleV1alpha1"))
}

// NetworkingV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) NetworkingV1beta1() networkingv1beta1.NetworkingV1beta1Interface {
	panic(unsupportedGroup("NetworkingV1beta1"))
}

// NodeV1 is not built: see unsupportedGroups.
func (unsupportedGroups) NodeV1() nodev1.NodeV1Interface { panic(unsupportedGroup("NodeV1")) }

// NodeV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) NodeV1alpha1() nodev1alpha1.NodeV1alpha1Interface {
	panic(unsupportedGroup("NodeV1alpha1"))
}

// NodeV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) NodeV1beta1() nodev1beta1.NodeV1beta1Interface {
	panic(unsupportedGroup("NodeV1beta1"))
}

// PolicyV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) PolicyV1beta1() policyv1beta1.PolicyV1beta1Interface {
	panic(unsupportedGroup("PolicyV1beta1"))
}

// RbacV1 is not built: see unsupportedGroups.
func (unsupportedGroups) RbacV1() rbacv1.RbacV1Interface { panic(unsupportedGroup("RbacV1")) }

// RbacV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) RbacV1beta1() rbacv1beta1.RbacV1beta1Interface {
	panic(unsupportedGroup("RbacV1beta1"))
}

// RbacV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) RbacV1alpha1() rbacv1alpha1.RbacV1alpha1Interface {
	panic(unsupportedGroup("RbacV1alpha1"))
}

// ResourceV1 is not built: see unsupportedGroups.
func (unsupportedGroups) ResourceV1() resourcev1.ResourceV1Interface {
	panic(unsupportedGroup("ResourceV1"))
}

// ResourceV1beta2 is not built: see unsupportedGroups.
func (unsupportedGroups) ResourceV1beta2() resourcev1beta2.ResourceV1beta2Interface {
	panic(unsupportedGroup("ResourceV1beta2"))
}

// ResourceV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) ResourceV1beta1() resourcev1beta1.ResourceV1beta1Interface {
	panic(unsupportedGroup("ResourceV1beta1"))
}

// ResourceV1alpha3 is not built: see unsupportedGroups.
func (unsupportedGroups) ResourceV1alpha3() resourcev1alpha3.ResourceV1alpha3Interface {
	panic(unsupportedGroup("ResourceV1alpha3"))
}

// SchedulingV1alpha3 is not built: see unsupportedGroups.
func (unsupportedGroups) SchedulingV1alpha3() schedulingv1alpha3.SchedulingV1alpha3Interface {
	panic(unsupportedGroup("SchedulingV1alpha3"))
}

// SchedulingV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) SchedulingV1beta1() schedulingv1beta1.SchedulingV1beta1Interface {
	panic(unsupportedGroup("SchedulingV1beta1"))
}

// SchedulingV1 is not built: see unsupportedGroups.
func (unsupportedGroups) SchedulingV1() schedulingv1.SchedulingV1Interface {
	panic(unsupportedGroup("SchedulingV1"))
}

// StorageV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) StorageV1beta1() storagev1beta1.StorageV1beta1Interface {
	panic(unsupportedGroup("StorageV1beta1"))
}

// StorageV1 is not built: see unsupportedGroups.
func (unsupportedGroups) StorageV1() storagev1.StorageV1Interface {
	panic(unsupportedGroup("StorageV1"))
}

// StorageV1alpha1 is not built: see unsupportedGroups.
func (unsupportedGroups) StorageV1alpha1() storagev1alpha1.StorageV1alpha1Interface {
	panic(unsupportedGroup("StorageV1alpha1"))
}

// StoragemigrationV1 is not built: see unsupportedGroups.
func (unsupportedGroups) StoragemigrationV1() storagemigrationv1.StoragemigrationV1Interface {
	panic(unsupportedGroup("StoragemigrationV1"))
}

// StoragemigrationV1beta1 is not built: see unsupportedGroups.
func (unsupportedGroups) StoragemigrationV1beta1() storagemigrationv1beta1.StoragemigrationV1beta1Interface {
	panic(unsupportedGroup("StoragemigrationV1beta1"))
}
