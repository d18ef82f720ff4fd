package client

import (
	"errors"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clientset is the production Interface: one REST client per API group, all on one HTTP
// client and one client-side rate limiter, each resource a typed client making client-go's generic typed
// client's requests (typed.go).
type Clientset struct {
	discovery               *discoveryClient
	admissionregistrationV1 admissionregistrationV1Client
	appsV1                  appsV1Client
	authorizationV1         authorizationV1Client
	coreV1                  coreV1Client
	discoveryV1             discoveryV1Client
	networkingV1            networkingV1Client
	policyV1                policyV1Client
}

var _ Interface = (*Clientset)(nil)

// NewForConfig builds the clientset from cfg as client-go's kubernetes.NewForConfig does
// (client-go v0.37.2, kubernetes/clientset.go): client-go's user agent when cfg has none, one
// HTTP client and one client-side rate limiter (cfg's QPS and Burst) shared by every group.
func NewForConfig(cfg *rest.Config) (*Clientset, error) {
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
			return nil, errors.New("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		shallow.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shallow.QPS, shallow.Burst)
	}
	return NewForConfigAndClient(&shallow, hc)
}

// NewForConfigAndClient builds each group's REST client from cfg on hc.
func NewForConfigAndClient(cfg *rest.Config, hc *http.Client) (*Clientset, error) {
	var cs Clientset
	for _, g := range []struct {
		rc *rest.Interface
		gv schema.GroupVersion
	}{
		{&cs.admissionregistrationV1.rc, admissionregistrationv1.SchemeGroupVersion},
		{&cs.appsV1.rc, appsv1.SchemeGroupVersion},
		{&cs.authorizationV1.rc, authorizationv1.SchemeGroupVersion},
		{&cs.coreV1.rc, corev1.SchemeGroupVersion},
		{&cs.discoveryV1.rc, discoveryv1.SchemeGroupVersion},
		{&cs.networkingV1.rc, networkingv1.SchemeGroupVersion},
		{&cs.policyV1.rc, policyv1.SchemeGroupVersion},
	} {
		// one error per group, as client-go's NewForConfigAndClient returns it
		rc, err := GroupRESTClient(cfg, hc, g.gv)
		if err != nil {
			return nil, err
		}
		*g.rc = rc
	}
	// Discovery asks absolute paths (/version, /apis): any group's client reaches them with the
	// same transport, user agent and rate limiter.
	cs.discovery = &discoveryClient{rc: cs.coreV1.rc}
	return &cs, nil
}

// GroupRESTClient is the REST client of one API group/version, configured as client-go's
// generated NewForConfigAndClient configures it (client-go v0.37.2,
// kubernetes/typed/<group>/<version>/<group>_client.go, setConfigDefaults): the group/version,
// APIPath /api for the core group and /apis for the others, and the generated clients'
// serializer (rest.CodecFactoryForGeneratedClient(...).WithoutConversion()) over Scheme() instead
// of client-go's every-group scheme.
func GroupRESTClient(cfg *rest.Config, hc *http.Client, gv schema.GroupVersion) (*rest.RESTClient, error) {
	config := *cfg
	config.GroupVersion = &gv
	config.APIPath = "/apis"
	if gv.Group == "" {
		config.APIPath = "/api"
	}
	config.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme(), Codecs()).WithoutConversion()
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(&config, hc)
}

// object is gentype's constraint on a typed object (an API object with metadata).
type object interface {
	runtime.Object
	metav1.Object
}

// Discovery answers the server's version and API groups.
func (c *Clientset) Discovery() DiscoveryInterface { return c.discovery }

// AdmissionregistrationV1 is the admissionregistration.k8s.io/v1 group.
func (c *Clientset) AdmissionregistrationV1() AdmissionregistrationV1Interface {
	return c.admissionregistrationV1
}

// AppsV1 is the apps/v1 group.
func (c *Clientset) AppsV1() AppsV1Interface { return c.appsV1 }

// AuthorizationV1 is the authorization.k8s.io/v1 group.
func (c *Clientset) AuthorizationV1() AuthorizationV1Interface { return c.authorizationV1 }

// CoreV1 is the core (legacy) group, v1.
func (c *Clientset) CoreV1() CoreV1Interface { return c.coreV1 }

// DiscoveryV1 is the discovery.k8s.io/v1 group.
func (c *Clientset) DiscoveryV1() DiscoveryV1Interface { return c.discoveryV1 }

// NetworkingV1 is the networking.k8s.io/v1 group.
func (c *Clientset) NetworkingV1() NetworkingV1Interface { return c.networkingV1 }

// PolicyV1 is the policy/v1 group.
func (c *Clientset) PolicyV1() PolicyV1Interface { return c.policyV1 }
