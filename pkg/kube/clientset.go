package kube

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	networkingv1 "k8s.io/client-go/kubernetes/typed/networking/v1"
	policyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clientset is kubernetes.Interface with only the API groups the plugin reads built, on one
// shared HTTP client. kubernetes.NewForConfig builds a client for every group client-go knows
// (about 50) and links each one's typed client and apply configurations: issue 27 measured 4.7
// MB of the release binary for them. The plugin's packages keep kubernetes.Interface as their
// seam (the fake clientset in tests); any other group panics naming itself (unsupportedGroup),
// and TestClientsetGroupsCalled keeps the plugin's calls within the built ones.
type Clientset struct {
	unsupportedGroups
	disc                    *discovery.DiscoveryClient
	admissionregistrationV1 *admissionregistrationv1.AdmissionregistrationV1Client
	appsV1                  *appsv1.AppsV1Client
	authorizationV1         *authorizationv1.AuthorizationV1Client
	coreV1                  *corev1.CoreV1Client
	discoveryV1             *discoveryv1.DiscoveryV1Client
	networkingV1            *networkingv1.NetworkingV1Client
	policyV1                *policyv1.PolicyV1Client
}

var _ kubernetes.Interface = (*Clientset)(nil)

// NewClientset builds the groups' clients from cfg as kubernetes.NewForConfig does (client-go
// v0.37.2, kubernetes/clientset.go): client-go's user agent when cfg has none, one HTTP client
// and one client-side rate limiter shared by every group.
func NewClientset(cfg *rest.Config) (*Clientset, error) {
	shallow := *cfg
	if shallow.UserAgent == "" {
		shallow.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&shallow)
	if err != nil {
		return nil, err
	}
	if shallow.RateLimiter == nil && shallow.QPS > 0 {
		if shallow.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		shallow.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shallow.QPS, shallow.Burst)
	}
	return newClientset(&shallow, hc)
}

func newClientset(cfg *rest.Config, hc *http.Client) (*Clientset, error) {
	var (
		cs  Clientset
		err error
	)
	// One error per group, as kubernetes.NewForConfigAndClient returns it.
	if cs.disc, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.admissionregistrationV1, err = admissionregistrationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.appsV1, err = appsv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.authorizationV1, err = authorizationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.coreV1, err = corev1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.discoveryV1, err = discoveryv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.networkingV1, err = networkingv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.policyV1, err = policyv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	return &cs, nil
}

// Discovery answers the API server's discovery questions (/version, /apis).
func (c *Clientset) Discovery() discovery.DiscoveryInterfaces { return c.disc }

// AdmissionregistrationV1 reads webhooks and ValidatingAdmissionPolicies (LA106).
func (c *Clientset) AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface {
	return c.admissionregistrationV1
}

// AppsV1 reads Deployments, DaemonSets and ReplicaSets.
func (c *Clientset) AppsV1() appsv1.AppsV1Interface { return c.appsV1 }

// AuthorizationV1 asks access and rules reviews (LA001).
func (c *Clientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return c.authorizationV1
}

// CoreV1 reads and, for the helper pods and fixes, writes the core group.
func (c *Clientset) CoreV1() corev1.CoreV1Interface { return c.coreV1 }

// DiscoveryV1 reads EndpointSlices.
func (c *Clientset) DiscoveryV1() discoveryv1.DiscoveryV1Interface { return c.discoveryV1 }

// NetworkingV1 reads Ingresses, IngressClasses, NetworkPolicies and ServiceCIDRs.
func (c *Clientset) NetworkingV1() networkingv1.NetworkingV1Interface { return c.networkingV1 }

// PolicyV1 reads PodDisruptionBudgets.
func (c *Clientset) PolicyV1() policyv1.PolicyV1Interface { return c.policyV1 }

// unsupportedGroups holds kubernetes.Interface's other groups (clientset_unsupported.go).
type unsupportedGroups struct{}

// unsupportedGroup is the panic of a group Clientset does not build: a programming error (a
// new call of a group no test reached), named so that the fix is obvious.
func unsupportedGroup(method string) string {
	return fmt.Sprintf("kube.Clientset: the API group of %s() is not built; add it to pkg/kube/clientset.go", method)
}
