// Package proxyroute is the reverse proxy's route model: which routes Traefik really serves
// (IngressRoutes, Ingresses, Gateway API HTTPRoutes), on which entry points the LAN reaches,
// behind which authentication, and so which probe host doctor asks for and where its anonymous
// redirect may point. It judges nothing and reads nothing: discovery (package kube) lists the
// objects, Build models them once, and the checks read the Model.
package proxyroute

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// Objects are what discovery read that the route model is built from.
type Objects struct {
	ProxyService  *corev1.Service
	ProxyWorkload *appsv1.Deployment
	ProxyPods     []corev1.Pod
	// Services are the cluster's Services that discovery kept (those claiming addresses).
	Services       []corev1.Service
	Ingresses      []networkingv1.Ingress
	IngressClasses []networkingv1.IngressClass
	IngressRoutes  []unstructured.Unstructured
	// IngressRouteStreams are Traefik's IngressRouteTCPs and IngressRouteUDPs.
	IngressRouteStreams []unstructured.Unstructured
	Middlewares         []unstructured.Unstructured
	// MiddlewaresInstalled: Traefik's Middleware CRD is installed (and was read).
	MiddlewaresInstalled bool
	GatewayClasses       []unstructured.Unstructured
	Gateways             []unstructured.Unstructured
	HTTPRoutes           []unstructured.Unstructured
	// ReferenceGrants let an HTTPRoute or a Gateway name an object of another namespace.
	ReferenceGrants []unstructured.Unstructured
	// AuthorizationPolicies are Istio's; AuthorizationPoliciesUnread says why they could not be
	// read ("" when they were, or when their CRD is not installed).
	AuthorizationPolicies       []unstructured.Unstructured
	AuthorizationPoliciesUnread string
	// HTTPProxies are Contour's routes.
	HTTPProxies []unstructured.Unstructured
	Namespaces  []corev1.Namespace
	Zone        zone.Zone
	// ProxyConfigMaps are the ConfigMaps the proxy's controller is told to read (ingress-nginx's
	// --configmap); ProxyConfigMapsUnread says why they could not be read ("" when they were).
	ProxyConfigMaps       []corev1.ConfigMap
	ProxyConfigMapsUnread string
}

// Model is the proxy's routes as Traefik serves them, and what the probes take from them.
type Model struct {
	// Implementation is the reverse proxy the Service on the node addresses fronts: its
	// routes are modelled with its semantics (Traefik, ingress-nginx), or named as not judged.
	Implementation Implementation
	// Traefik is the proxy's static configuration (when it is Traefik).
	Traefik TraefikConfig
	// Nginx is the ingress-nginx controller's configuration (when it is ingress-nginx).
	Nginx NginxConfig
	// Routes are the proxy's routes (IngressRoutes, Ingresses and HTTPRoutes), resolved once;
	// LA107 judges them and the probe host is chosen among the served ones. MiddlewaresKnown
	// is false when the Middleware CRDs could not be read (names are then the only hint);
	// AuthMiddleware is an authenticating Middleware of the cluster ("namespace/name", "" when
	// none) to suggest.
	Routes []Route
	// StreamRoutes are the proxy's TCP and UDP routers (IngressRouteTCP, IngressRouteUDP).
	StreamRoutes     []StreamRoute
	MiddlewaresKnown bool
	AuthMiddleware   string
	// ProbeHost is the name the DNS and HTTPS probes ask for (--host, else a served route in
	// the zone, else the apex), with where its redirect may point.
	ProbeHost ProbeHost
}

// builder models Objects into a Model.
type builder struct {
	Objects
	Model
}

// Build models the objects; host is --host ("" to choose a served route in the zone).
func Build(o Objects, host string) Model {
	b := &builder{Objects: o}
	b.readRouteModel()
	b.ProbeHost = chooseProbeHost(host, o.Zone, b.Routes)
	b.ProbeHost.Redirect = b.redirectTargets(b.ProbeHost)
	return b.Model
}
