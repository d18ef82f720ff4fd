package proxyroute

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// The proxy is not always Traefik: the Service carrying the node addresses fronts whatever its
// selected pods run. Implementation says which reverse proxy that is, identified from what
// really decides it, so that its routes are judged with its own semantics where they are
// modelled, and named as not judged where they are not.
//
// What identifies each (the projects' own images, flags and controller names):
//   - Traefik: image traefik (docker.io/traefik, the Traefik chart's image.repository);
//     IngressClass controller traefik.io/ingress-controller, GatewayClass controllerName
//     traefik.io/gateway-controller (traefik/traefik v3.7.9 pkg/provider/kubernetes/ingress
//     kubernetes.go traefikDefaultIngressClassController, pkg/provider/kubernetes/gateway
//     kubernetes.go).
//   - ingress-nginx: image registry.k8s.io/ingress-nginx/controller (or controller-chroot),
//     args /nginx-ingress-controller --controller-class (default k8s.io/ingress-nginx) and
//     --ingress-class (default nginx) (kubernetes/ingress-nginx helm-chart-4.15.1, commit
//     0a5901f3c64f11e92e487799b8da3f00cca37515, charts/ingress-nginx/values.yaml
//     controller.image and controller.ingressClassResource.controllerValue;
//     pkg/flags/flags.go).
//   - HAProxy Kubernetes Ingress (haproxytech): image haproxytech/kubernetes-ingress, IngressClass
//     controller haproxy.org/ingress-controller/<class> (haproxytech/helm-charts
//     kubernetes-ingress 1.52.1 templates/controller-ingressclass.yaml).
//   - HAProxy Ingress (jcmoraisjr): image jcmoraisjr/haproxy-ingress, IngressClass controller
//     haproxy-ingress.github.io/controller (jcmoraisjr/haproxy-ingress pkg/common/ingress/
//     controller/launch.go, --controller-class).
//   - Contour: Envoy pods beside a projectcontour/contour container (the shutdown-manager of
//     projectcontour/contour examples/contour/03-envoy.yaml), IngressClass/GatewayClass
//     controller projectcontour.io/... .
//   - Envoy Gateway: Envoy pods labelled app.kubernetes.io/managed-by=envoy-gateway
//     (envoyproxy/gateway internal/infrastructure/kubernetes/proxy resource.go envoyLabels),
//     GatewayClass controllerName gateway.envoyproxy.io/gatewayclass-controller.
//   - Istio's gateway: image istio/proxyv2 with args "proxy router", GatewayClass controllerName
//     istio.io/gateway-controller (istio/istio pilot/pkg/config/kube/gateway, the deployment
//     template kube-gateway.yaml).
//   - NGINX Gateway Fabric: data plane image nginx/nginx-gateway-fabric/nginx, GatewayClass
//     controllerName gateway.nginx.org/nginx-gateway-controller (nginx/nginx-gateway-fabric
//     v2.6.7 charts/nginx-gateway-fabric/values.yaml nginxGateway.gatewayControllerName).
//   - NGINX Inc's Ingress Controller: image nginx/nginx-ingress, IngressClass controller
//     nginx.org/ingress-controller.

// ImplementationName names a reverse proxy implementation.
type ImplementationName string

// The implementations doctor recognises. Only Traefik and ingress-nginx are modelled: the
// others are named, their routes read where Kubernetes' own API says what they serve, and their
// authentication is not judged.
const (
	ImplUnknown        ImplementationName = ""
	ImplTraefik        ImplementationName = "Traefik"
	ImplIngressNginx   ImplementationName = "ingress-nginx"
	ImplHAProxyTech    ImplementationName = "HAProxy Kubernetes Ingress (haproxytech)"
	ImplHAProxyIngress ImplementationName = "HAProxy Ingress (jcmoraisjr)"
	ImplContour        ImplementationName = "Contour (Envoy)"
	ImplEnvoyGateway   ImplementationName = "Envoy Gateway"
	ImplIstio          ImplementationName = "Istio gateway (Envoy)"
	ImplNGF            ImplementationName = "NGINX Gateway Fabric"
	ImplNginxInc       ImplementationName = "NGINX Ingress Controller (nginx.org)"
	ImplEnvoy          ImplementationName = "Envoy (controller not identified)"
)

// Implementation is the reverse proxy the Service on the node addresses fronts.
type Implementation struct {
	Name ImplementationName
	// Image is the image of the container that identified it; Version its tag's version
	// ("v1.15.1"; "" when the tag is not a version).
	Image   string
	Version string
	// IdentifiedBy says from what: "image registry.k8s.io/ingress-nginx/controller:v1.15.1 of
	// container controller", "GatewayClass istio (controllerName istio.io/gateway-controller)".
	IdentifiedBy string
	// Container is the container that runs it ("" when identified otherwise).
	Container string
	// IngressController is the IngressClass spec.controller it serves ("" when it serves no
	// Ingress or it is not known); GatewayController the GatewayClass controllerName.
	IngressController string
	GatewayController string
	// Unjudged says what of its configuration the route model does not read ("" when its
	// routes' authentication is modelled).
	Unjudged string
	// PodsRead: the proxy Service's pods (or its Deployment's template) were read.
	PodsRead bool
	// AuthorizationRead: Istio's AuthorizationPolicies were read (or are not installed), so the
	// routes of Istio's gateway are judged by them (istio.go).
	AuthorizationRead bool
}

// Modelled reports whether the route model judges the implementation's routes.
func (i Implementation) Modelled() bool {
	return i.Name == ImplTraefik || i.Name == ImplIngressNginx || (i.Name == ImplIstio && i.AuthorizationRead)
}

// String is "ingress-nginx v1.15.1 (image ... of container controller)".
func (i Implementation) String() string {
	if i.Name == ImplUnknown {
		return "an implementation doctor does not recognise (" + i.IdentifiedBy + ")"
	}
	out := string(i.Name)
	if i.Version != "" {
		out += " " + i.Version
	}
	return out + " (" + i.IdentifiedBy + ")"
}

// imageRule identifies an implementation from a container image's repository path.
type imageRule struct {
	name ImplementationName
	// suffixes of the repository path (registry removed), any of which matches.
	suffixes []string
	// word: the image's last path element contains it (Traefik's images are mirrored under
	// many names: rancher/mirrored-library-traefik in k3s).
	word              string
	ingressController string
	gatewayController string
	unjudged          string
}

// imageRules in order: the first container matching one decides.
var imageRules = []imageRule{
	{name: ImplIngressNginx, suffixes: []string{"ingress-nginx/controller", "ingress-nginx/controller-chroot", "kubernetes-ingress-controller/nginx-ingress-controller"},
		ingressController: "k8s.io/ingress-nginx"},
	{name: ImplHAProxyTech, suffixes: []string{"haproxytech/kubernetes-ingress"},
		ingressController: "haproxy.org/ingress-controller/haproxy",
		unjudged:          "its authentication annotations (haproxy.org/auth-type, auth-secret) and its ConfigMap are not read"},
	{name: ImplHAProxyIngress, suffixes: []string{"jcmoraisjr/haproxy-ingress"},
		ingressController: "haproxy-ingress.github.io/controller",
		unjudged:          "its authentication annotations (haproxy-ingress.github.io/auth-*) and its ConfigMap are not read"},
	{name: ImplNGF, suffixes: []string{"nginx-gateway-fabric/nginx", "nginx/nginx-gateway-fabric"},
		gatewayController: "gateway.nginx.org/nginx-gateway-controller",
		unjudged:          "its policies attached to routes or Gateways (NGINX Gateway Fabric's own CRDs) are not read; HTTPRoute filters alone do not tell whether a route authenticates"},
	{name: ImplIstio, suffixes: []string{"istio/proxyv2"},
		gatewayController: "istio.io/gateway-controller",
		unjudged:          "Istio's AuthorizationPolicy and RequestAuthentication that select the gateway are not read"},
	{name: ImplNginxInc, suffixes: []string{"nginx/nginx-ingress", "nginx/nginx-plus-ingress"},
		ingressController: "nginx.org/ingress-controller",
		unjudged:          "its annotations (nginx.org/*), VirtualServer and Policy resources are not read"},
	{name: ImplTraefik, word: "traefik", ingressController: "traefik.io/ingress-controller", gatewayController: TraefikGatewayController},
}

// envoyUnjudged are what the route model does not read of the Envoy-based controllers.
const (
	contourUnjudged      = "Contour's HTTPProxy resources and their virtualhost.authorization are not read"
	envoyGatewayUnjudged = "Envoy Gateway's SecurityPolicy resources (oidc, extAuth, basicAuth, jwt) are not read"
)

// identify finds the implementation the proxy Service fronts: the image of its pods'
// containers first (what really runs), then the GatewayClass of the Gateway that provisioned
// the pods (their gateway.networking.k8s.io/gateway-name or Envoy Gateway's owning-gateway
// labels). An unrecognised proxy is ImplUnknown, named by its images.
func (s *builder) identify() Implementation {
	var tmpl *corev1.PodTemplateSpec
	if s.ProxyWorkload != nil {
		tmpl = &s.ProxyWorkload.Spec.Template
	}
	spec := kubeobj.PodSpecOf(tmpl, s.ProxyPods)
	podLabels := map[string]string{}
	switch {
	case tmpl != nil:
		podLabels = tmpl.Labels
	case len(s.ProxyPods) > 0:
		podLabels = s.ProxyPods[0].Labels
	}
	if spec == nil {
		return Implementation{IdentifiedBy: "the proxy Service's pods were not found"}
	}
	impl, envoy := identifyByImage(spec)
	if envoy != nil {
		impl = identifyEnvoy(spec, podLabels, *envoy)
	}
	if gc, ok := s.gatewayClassOf(podLabels); ok {
		ctrl, _, _ := unstructured.NestedString(gc.Object, "spec", "controllerName")
		if impl.Name == ImplUnknown {
			impl = byGatewayController(ctrl)
			impl.IdentifiedBy = fmt.Sprintf("GatewayClass %s (controllerName %s) of the Gateway that provisioned the pods", gc.GetName(), ctrl)
		} else {
			impl.IdentifiedBy += fmt.Sprintf("; GatewayClass %s, controllerName %s", gc.GetName(), ctrl)
		}
		impl.GatewayController = ctrl
	}
	if impl.Name == ImplUnknown && impl.IdentifiedBy == "" {
		var images []string
		for _, c := range spec.Containers {
			images = append(images, c.Image)
		}
		impl.IdentifiedBy = "images " + strings.Join(images, ", ")
		impl.Unjudged = "its routes and their authentication are not read"
	}
	impl.PodsRead = true
	c, _ := containerNamed(spec, impl.Container)
	switch impl.Name {
	case ImplIngressNginx:
		if v := nginxArg(c, "controller-class"); v != "" {
			impl.IngressController = v
		}
	case ImplHAProxyTech:
		// haproxytech/kubernetes-ingress pkg/ingress/ingress.go: the IngressClass controller it
		// serves is haproxy.org/ingress-controller/ followed by --ingress.class.
		if v := nginxArg(c, "ingress.class"); v != "" {
			impl.IngressController = "haproxy.org/ingress-controller/" + v
		}
	}
	return impl
}

// identifyByImage matches the containers' images; envoy is the Envoy container when only an
// Envoy image was found (its controller is told apart by identifyEnvoy).
func identifyByImage(spec *corev1.PodSpec) (Implementation, *corev1.Container) {
	var envoy *corev1.Container
	for _, rule := range imageRules {
		for i := range spec.Containers {
			c := spec.Containers[i]
			if !imageMatches(c.Image, rule.suffixes) && (rule.word == "" || !kubeobj.ImageNames(c.Image, rule.word)) {
				continue
			}
			return Implementation{Name: rule.name, Image: c.Image, Version: ImageVersion(c.Image), Container: c.Name,
				IdentifiedBy:      fmt.Sprintf("image %s of container %s", c.Image, c.Name),
				IngressController: rule.ingressController, GatewayController: rule.gatewayController, Unjudged: rule.unjudged}, nil
		}
	}
	for i := range spec.Containers {
		if imageMatches(spec.Containers[i].Image, []string{"envoyproxy/envoy"}) {
			envoy = &spec.Containers[i]
		}
	}
	return Implementation{}, envoy
}

// identifyEnvoy tells which controller configures an Envoy pod: Contour runs its
// shutdown-manager (image projectcontour/contour) beside Envoy; Envoy Gateway labels the pods
// it provisions.
func identifyEnvoy(spec *corev1.PodSpec, podLabels map[string]string, c corev1.Container) Implementation {
	impl := Implementation{Name: ImplEnvoy, Image: c.Image, Version: ImageVersion(c.Image), Container: c.Name,
		IdentifiedBy: fmt.Sprintf("image %s of container %s", c.Image, c.Name),
		Unjudged:     "the controller that configures this Envoy was not identified, so its routes are not read"}
	for _, o := range spec.Containers {
		if imageMatches(o.Image, []string{"projectcontour/contour"}) {
			impl.Name, impl.Unjudged = ImplContour, contourUnjudged
			impl.Version = ImageVersion(o.Image) // Contour's version; the image names Envoy's
			impl.IdentifiedBy += fmt.Sprintf(" beside container %s (image %s)", o.Name, o.Image)
			return impl
		}
	}
	if podLabels["app.kubernetes.io/managed-by"] == "envoy-gateway" {
		impl.Name, impl.Unjudged = ImplEnvoyGateway, envoyGatewayUnjudged
		impl.Version = "" // the image's tag is Envoy's version, not Envoy Gateway's
		impl.GatewayController = "gateway.envoyproxy.io/gatewayclass-controller"
		impl.IdentifiedBy += ", pods labelled app.kubernetes.io/managed-by=envoy-gateway"
	}
	return impl
}

// byGatewayController is the implementation a GatewayClass controllerName names.
func byGatewayController(ctrl string) Implementation {
	switch {
	case ctrl == "gateway.envoyproxy.io/gatewayclass-controller":
		return Implementation{Name: ImplEnvoyGateway, Unjudged: envoyGatewayUnjudged}
	case strings.HasPrefix(ctrl, "projectcontour.io/"):
		return Implementation{Name: ImplContour, Unjudged: contourUnjudged}
	}
	for _, rule := range imageRules {
		if rule.gatewayController != "" && rule.gatewayController == ctrl {
			return Implementation{Name: rule.name, Unjudged: rule.unjudged}
		}
	}
	return Implementation{Unjudged: "its routes and their authentication are not read"}
}

// gatewayClassOf is the GatewayClass of the Gateway whose provisioned pods carry podLabels.
func (s *builder) gatewayClassOf(podLabels map[string]string) (unstructured.Unstructured, bool) {
	name, ns := podLabels["gateway.networking.k8s.io/gateway-name"], ""
	if s.ProxyService != nil {
		ns = s.ProxyService.Namespace
	}
	if eg := podLabels["gateway.envoyproxy.io/owning-gateway-name"]; eg != "" {
		name, ns = eg, podLabels["gateway.envoyproxy.io/owning-gateway-namespace"]
	}
	if name == "" {
		return unstructured.Unstructured{}, false
	}
	gw, ok := findObject(s.Gateways, ns, name)
	if !ok {
		return unstructured.Unstructured{}, false
	}
	class, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName")
	for _, gc := range s.GatewayClasses {
		if gc.GetName() == class {
			return gc, true
		}
	}
	return unstructured.Unstructured{}, false
}

// imageMatches reports whether the image's repository path (registry, tag and digest removed)
// ends with one of suffixes, on a path boundary.
func imageMatches(image string, suffixes []string) bool {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	repo = strings.ToLower(repo)
	for _, sfx := range suffixes {
		if repo == sfx || strings.HasSuffix(repo, "/"+sfx) {
			return true
		}
	}
	return false
}

// ImageVersion is the version an image's tag names ("v1.15.1" for :v1.15.1 and :1.15.1, the
// Envoy images' distroless-v1.38.3 read as v1.38.3), "" when the tag is not a version.
func ImageVersion(image string) string {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		repo = repo[i+1:]
	}
	_, tag, ok := strings.Cut(repo, ":")
	if !ok {
		return ""
	}
	if _, after, found := strings.Cut(tag, "-v"); found {
		tag = after
	}
	return TraefikConfig{Image: "x:" + tag}.Version()
}

func containerNamed(spec *corev1.PodSpec, name string) (corev1.Container, bool) {
	for _, c := range spec.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}
