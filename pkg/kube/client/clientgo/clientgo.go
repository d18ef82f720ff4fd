// Package clientgo adapts a client-go clientset (kubernetes.Interface: the fake one in tests,
// the full one the lab's programs build) to client.Interface. It imports client-go's every-group
// clientset, so only tests and lab/ may import it; the plugin's binary must not (TestReleaseDeps
// in cmd/kubectl-lanaccess).
//
// The adapter has no behaviour of its own: each group hands out client-go's resource clients,
// which satisfy client.Interface's resource interfaces as they are, so a fake clientset's
// objects, reactors and recorded actions work unchanged.
package clientgo

import (
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	networkingv1 "k8s.io/client-go/kubernetes/typed/networking/v1"
	policyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// Wrap adapts cs to client.Interface; nil stays nil.
func Wrap(cs kubernetes.Interface) client.Interface {
	if cs == nil {
		return nil
	}
	return clientset{cs}
}

type clientset struct{ cs kubernetes.Interface }

// Discovery: client-go's discovery client has ServerVersion and ServerGroups as they are.
func (c clientset) Discovery() client.DiscoveryInterface { return c.cs.Discovery() }

func (c clientset) AdmissionregistrationV1() client.AdmissionregistrationV1Interface {
	return admissionregistration{c.cs.AdmissionregistrationV1()}
}
func (c clientset) AppsV1() client.AppsV1Interface { return apps{c.cs.AppsV1()} }
func (c clientset) AuthorizationV1() client.AuthorizationV1Interface {
	return authorization{c.cs.AuthorizationV1()}
}
func (c clientset) CoreV1() client.CoreV1Interface { return core{c.cs.CoreV1()} }
func (c clientset) DiscoveryV1() client.DiscoveryV1Interface {
	return discoveryGroup{c.cs.DiscoveryV1()}
}
func (c clientset) NetworkingV1() client.NetworkingV1Interface {
	return networking{c.cs.NetworkingV1()}
}
func (c clientset) PolicyV1() client.PolicyV1Interface { return policy{c.cs.PolicyV1()} }

type admissionregistration struct {
	g admissionregistrationv1.AdmissionregistrationV1Interface
}

func (a admissionregistration) ValidatingWebhookConfigurations() client.ValidatingWebhookConfigurationInterface {
	return a.g.ValidatingWebhookConfigurations()
}
func (a admissionregistration) ValidatingAdmissionPolicies() client.ValidatingAdmissionPolicyInterface {
	return a.g.ValidatingAdmissionPolicies()
}
func (a admissionregistration) ValidatingAdmissionPolicyBindings() client.ValidatingAdmissionPolicyBindingInterface {
	return a.g.ValidatingAdmissionPolicyBindings()
}

type apps struct{ g appsv1.AppsV1Interface }

func (a apps) DaemonSets(ns string) client.DaemonSetInterface   { return a.g.DaemonSets(ns) }
func (a apps) Deployments(ns string) client.DeploymentInterface { return a.g.Deployments(ns) }
func (a apps) ReplicaSets(ns string) client.ReplicaSetInterface { return a.g.ReplicaSets(ns) }

type authorization struct {
	g authorizationv1.AuthorizationV1Interface
}

func (a authorization) SelfSubjectAccessReviews() client.SelfSubjectAccessReviewInterface {
	return a.g.SelfSubjectAccessReviews()
}
func (a authorization) SelfSubjectRulesReviews() client.SelfSubjectRulesReviewInterface {
	return a.g.SelfSubjectRulesReviews()
}

type core struct{ g corev1.CoreV1Interface }

func (c core) RESTClient() rest.Interface                     { return c.g.RESTClient() }
func (c core) ConfigMaps(ns string) client.ConfigMapInterface { return c.g.ConfigMaps(ns) }
func (c core) Events(ns string) client.EventInterface         { return c.g.Events(ns) }
func (c core) Namespaces() client.NamespaceInterface          { return c.g.Namespaces() }
func (c core) Nodes() client.NodeInterface                    { return c.g.Nodes() }
func (c core) Pods(ns string) client.PodInterface             { return c.g.Pods(ns) }
func (c core) Services(ns string) client.ServiceInterface     { return c.g.Services(ns) }

type discoveryGroup struct {
	g discoveryv1.DiscoveryV1Interface
}

func (d discoveryGroup) EndpointSlices(ns string) client.EndpointSliceInterface {
	return d.g.EndpointSlices(ns)
}

type networking struct {
	g networkingv1.NetworkingV1Interface
}

func (n networking) IngressClasses() client.IngressClassInterface { return n.g.IngressClasses() }
func (n networking) Ingresses(ns string) client.IngressInterface  { return n.g.Ingresses(ns) }
func (n networking) NetworkPolicies(ns string) client.NetworkPolicyInterface {
	return n.g.NetworkPolicies(ns)
}
func (n networking) ServiceCIDRs() client.ServiceCIDRInterface { return n.g.ServiceCIDRs() }

type policy struct{ g policyv1.PolicyV1Interface }

func (p policy) PodDisruptionBudgets(ns string) client.PodDisruptionBudgetInterface {
	return p.g.PodDisruptionBudgets(ns)
}
