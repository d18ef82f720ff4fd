package kube

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
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
	// Zone is the zone served by the template block (the --zone flag, else discovered).
	Zone zone.Zone
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
	// IngressRouteStreams are Traefik's IngressRouteTCPs and IngressRouteUDPs (unstructured): routers
	// of whole connections on the proxy's entry points (LA107, LA102).
	IngressRouteStreams []unstructured.Unstructured
	// AuthorizationPolicies are Istio's (unstructured): whether Istio's gateway authenticates.
	AuthorizationPolicies []unstructured.Unstructured
	// HTTPProxies are Contour's routes (unstructured), read for the probe host.
	HTTPProxies []unstructured.Unstructured
	// Middlewares (Traefik) referenced by routes, unstructured.
	Middlewares []unstructured.Unstructured
	// Warnings the API server returned while we read (e.g. the externalIPs deprecation).
	APIWarnings []string
	// Partial lists what could not be read and why (e.g. forbidden, or a *ScopeError for a read
	// outside Scope), so checks can SKIP with the reason rather than guess.
	Partial map[string]error
	// Scope are the namespaces discovery stayed in (Selection.Scope); nil: the whole cluster.
	Scope []string

	// ProxyWorkload is the Deployment whose pods back the proxy Service (nil if none found).
	ProxyWorkload *appsv1.Deployment
	// CorefileMounts are the mounts of ConfigMap in the DNS pod template's containers (a
	// subPath mount is never refreshed, which defeats `reload`).
	CorefileMounts []ConfigMapMount
	// CorefileConf is the file CoreDNS is told to read (-conf), "" when not given.
	CorefileConf string
	// Corefile is ConfigMap.Data[CorefileKey] parsed; CorefileErr is its syntax error (a
	// *corefile.ParseError naming the line). Both nil when there is no Corefile to read.
	Corefile    *corefile.Corefile
	CorefileErr error
	// ProxyConfigMaps are the ConfigMaps the proxy's controller reads (ingress-nginx's --configmap).
	ProxyConfigMaps []corev1.ConfigMap
	// IngressClasses tell which Ingresses the proxy serves.
	IngressClasses []networkingv1.IngressClass
	// Admission objects that may restrict externalIPs (CVE-2020-8554).
	ValidatingWebhooks      []admissionregistrationv1.ValidatingWebhookConfiguration
	AdmissionPolicies       []admissionregistrationv1.ValidatingAdmissionPolicy
	AdmissionPolicyBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// KyvernoPolicies are ClusterPolicies and Policies; GatekeeperTemplates are
	// ConstraintTemplates and GatekeeperConstraints the constraints of those templates that
	// mention externalIPs (all unstructured).
	KyvernoPolicies       []unstructured.Unstructured
	GatekeeperTemplates   []unstructured.Unstructured
	GatekeeperConstraints []unstructured.Unstructured
	// Installed records, per ReadKey of an optional resource (a CRD or a newer API), whether
	// the API server serves it: a CRD that is not installed is normal, not an error.
	Installed map[string]bool
	// KubeProxyConfig is the kube-proxy configuration (ConfigMap kube-system/kube-proxy, as
	// kubeadm writes it) when readable, "" otherwise.
	KubeProxyConfig string
	// ServerVersion is the API server's gitVersion ("" when unknown).
	ServerVersion string
	// Dataplane is what implements Services on the nodes (kube-proxy and its mode, or a
	// replacement), as the API shows it.
	Dataplane Dataplane

	// Model is the proxy's route model (package proxyroute): the Traefik configuration, the
	// routes as Traefik serves them and the probe host, built once from what discovery read.
	proxyroute.Model
	// ZoneAnswers are the zone template's A answers.
	ZoneAnswers ZoneAnswers

	// ProxyReach and DNSReach are where the proxy and the DNS are reachable from the LAN: the
	// address form (externalIPs, hostPort, LoadBalancer) and its addresses (reach.go). Read
	// them through ProxyReachable and DNSReachable.
	ProxyReach, DNSReach Reach
	// LBPods are k3s ServiceLB's pods (svclb-*, kube-system) per Service "namespace/name", for
	// the proxy and DNS Services of type LoadBalancer without a loadBalancerClass.
	LBPods map[string][]corev1.Pod

	// ProxyFacts: the proxy's Traefik configuration, Gateway API objects, namespaces and the
	// API server's admission flags.
	ProxyFacts
}

// ConfigMapMount is one container's mount of the Corefile ConfigMap.
type ConfigMapMount struct {
	Container string
	Volume    string
	MountPath string
	SubPath   string
	// Items maps ConfigMap keys to file paths when the volume lists items.
	Items map[string]string
}

// UnreadReason says why reads named by keys failed during discovery ("" when all were read).
func (s *Setup) UnreadReason(keys ...string) string {
	var why []string
	for _, k := range keys {
		if err := s.Unread(k); err != nil {
			why = append(why, fmt.Sprintf("could not read %s: %v", k, err))
		}
	}
	return strings.Join(why, "; ")
}

// Unread returns why the resource named by key (see ReadKey) could not be read, or nil.
func (s *Setup) Unread(key string) error {
	if s == nil || s.Partial == nil {
		return nil
	}
	return s.Partial[key]
}

// SelectsProxyPods reports whether svc (in the proxy's namespace) selects the proxy's pods:
// a companion of the proxy Service, like the Traefik chart's <name>-udp for HTTP/3.
func (s *Setup) SelectsProxyPods(svc *corev1.Service) bool {
	return s.ProxyService != nil && proxyroute.SelectsPodsOf(svc, s.ProxyService.Namespace, s.ProxyWorkload, s.ProxyPods)
}

// SelectsDNSPods reports whether svc (in the DNS Service's namespace) selects the DNS pods.
func (s *Setup) SelectsDNSPods(svc *corev1.Service) bool {
	return s.DNSService != nil && proxyroute.SelectsPodsOf(svc, s.DNSService.Namespace, s.DNSWorkload, s.DNSPods)
}
