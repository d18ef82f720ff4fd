package proxyroute

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// ingress-nginx's semantics, as kubernetes/ingress-nginx controller-v1.15.1 (tag
// helm-chart-4.15.1, commit 0a5901f3c64f11e92e487799b8da3f00cca37515) implements them:
//   - which Ingresses it serves: internal/ingress/controller/store/store.go GetIngressClass:
//     spec.ingressClassName naming an IngressClass whose spec.controller is --controller-class
//     (default k8s.io/ingress-nginx; the store's IngressClass informer keeps only those), else
//     the kubernetes.io/ingress.class annotation equal to --ingress-class (default nginx), else,
//     with --watch-ingress-without-class, an Ingress with no class at all ("_");
//   - authentication: internal/ingress/annotations/authreq/main.go (auth-url: every request is
//     first sent to that URL, nginx's auth_request; auth-signin optional) and
//     annotations/auth/main.go (auth-type basic|digest with auth-secret), annotations/authtls
//     (auth-tls-secret, auth-tls-verify-client default "on": client certificates); the ConfigMap's
//     global-auth-url applies to every location without its own auth-url unless the Ingress
//     says enable-global-auth "false" (annotations/authreqglobal/main.go,
//     internal/ingress/controller/template/template.go shouldApplyGlobalAuth);
//   - the catch-all: an Ingress with spec.defaultBackend and no rule configures the default
//     server "_", which answers every Host no other server has (controller.go createServers,
//     "Ingress defines a backend but no rule"), unless --disable-catch-all;
//   - flags and defaults: docs/user-guide/cli-arguments.md (--annotations-prefix default
//     nginx.ingress.kubernetes.io, --configmap, --watch-ingress-without-class,
//     --disable-catch-all).

// NginxConfig is what the route model reads of the ingress-nginx controller.
type NginxConfig struct {
	ControllerClass   string
	AnnotationClass   string
	WatchWithoutClass bool
	DisableCatchAll   bool
	AnnotationsPrefix string
	// ConfigMap is --configmap ("namespace/name", "" when not given); GlobalAuthURL its
	// global-auth-url. GlobalAuthUnknown says why the ConfigMap could not be read ("" when it
	// was, or none is given).
	ConfigMap         string
	GlobalAuthURL     string
	GlobalAuthUnknown string
}

// nginxArg is the value of --name=value or --name value in the container's command and args
// ("true" for a bare boolean flag, "" when absent).
func nginxArg(c corev1.Container, name string) string {
	all := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range all {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		k, v, has := strings.Cut(a, "=")
		if k != name {
			continue
		}
		if has {
			return v
		}
		if i+1 < len(all) && !strings.HasPrefix(all[i+1], "-") {
			return all[i+1]
		}
		return "true"
	}
	return ""
}

// readNginxConfig reads the ingress-nginx controller's flags and its ConfigMap.
func (s *builder) readNginxConfig() NginxConfig {
	cfg := NginxConfig{ControllerClass: "k8s.io/ingress-nginx", AnnotationClass: "nginx", AnnotationsPrefix: "nginx.ingress.kubernetes.io"}
	var tmpl *corev1.PodTemplateSpec
	if s.ProxyWorkload != nil {
		tmpl = &s.ProxyWorkload.Spec.Template
	}
	spec := kubeobj.PodSpecOf(tmpl, s.ProxyPods)
	if spec == nil {
		return cfg
	}
	c, ok := containerNamed(spec, s.Implementation.Container)
	if !ok {
		return cfg
	}
	if v := nginxArg(c, "controller-class"); v != "" {
		cfg.ControllerClass = v
	}
	if v := nginxArg(c, "ingress-class"); v != "" {
		cfg.AnnotationClass = v
	}
	if v := nginxArg(c, "annotations-prefix"); v != "" {
		cfg.AnnotationsPrefix = v
	}
	cfg.WatchWithoutClass, _ = strconv.ParseBool(nginxArg(c, "watch-ingress-without-class"))
	cfg.DisableCatchAll, _ = strconv.ParseBool(nginxArg(c, "disable-catch-all"))
	ref := nginxArg(c, "configmap")
	if ref == "" {
		return cfg
	}
	ns := s.ProxyService.Namespace
	for _, p := range s.ProxyPods {
		ns = p.Namespace
		break
	}
	ref = strings.ReplaceAll(ref, "$(POD_NAMESPACE)", ns)
	cfg.ConfigMap = ref
	cmNS, cmName, _ := strings.Cut(ref, "/")
	if s.ProxyConfigMapsUnread != "" {
		cfg.GlobalAuthUnknown = fmt.Sprintf("ConfigMap %s (--configmap) could not be read: %s", ref, s.ProxyConfigMapsUnread)
		return cfg
	}
	for _, cm := range s.ProxyConfigMaps {
		if cm.Namespace == cmNS && cm.Name == cmName {
			cfg.GlobalAuthURL = strings.TrimSpace(cm.Data["global-auth-url"])
		}
	}
	return cfg
}

// NginxConfigMapRef is the namespace/name of the ConfigMap an ingress-nginx container is told
// to read (--configmap, $(POD_NAMESPACE) being ns), "" when none: discovery reads it.
func NginxConfigMapRef(spec *corev1.PodSpec, ns string) string {
	if spec == nil {
		return ""
	}
	impl, _ := identifyByImage(spec)
	if impl.Name != ImplIngressNginx {
		return ""
	}
	c, _ := containerNamed(spec, impl.Container)
	return strings.ReplaceAll(nginxArg(c, "configmap"), "$(POD_NAMESPACE)", ns)
}

// nginxNotServed says why ingress-nginx does not serve an Ingress ("" when it does).
func (s *builder) nginxNotServed(ing networkingv1.Ingress) string {
	cfg := s.Nginx
	if ing.Spec.IngressClassName != nil && *ing.Spec.IngressClassName != "" {
		name := *ing.Spec.IngressClassName
		for _, c := range s.IngressClasses {
			if c.Name == name {
				if c.Spec.Controller == cfg.ControllerClass {
					return ""
				}
				return fmt.Sprintf("its class %s belongs to controller %s, not to ingress-nginx's %s", name, c.Spec.Controller, cfg.ControllerClass)
			}
		}
		return fmt.Sprintf("no IngressClass %s exists: ingress-nginx serves only classes of its controller %s", name, cfg.ControllerClass)
	}
	if a, ok := ing.Annotations["kubernetes.io/ingress.class"]; ok {
		if a == cfg.AnnotationClass {
			return ""
		}
		return fmt.Sprintf("its kubernetes.io/ingress.class %q is not the controller's --ingress-class %q", a, cfg.AnnotationClass)
	}
	if cfg.WatchWithoutClass {
		return ""
	}
	return "it has no class and the controller does not run --watch-ingress-without-class"
}

// nginxAuth says how ingress-nginx authenticates an Ingress's locations ("" when it does not).
func (s *builder) nginxAuth(ing networkingv1.Ingress) (auth string, unsure string) {
	cfg := s.Nginx
	ann := func(k string) string { return strings.TrimSpace(ing.Annotations[cfg.AnnotationsPrefix+"/"+k]) }
	if u := ann("auth-url"); u != "" {
		return "auth-url " + u, ""
	}
	if t := ann("auth-type"); (t == "basic" || t == "digest") && ann("auth-secret") != "" {
		return "auth-type " + t, ""
	}
	// annotations/authtls/main.go: auth-tls-secret with auth-tls-verify-client "on" (its
	// default) makes nginx refuse a client without a certificate the CA signed.
	if ann("auth-tls-secret") != "" && (ann("auth-tls-verify-client") == "" || ann("auth-tls-verify-client") == "on") {
		return "auth-tls-secret " + ann("auth-tls-secret") + " (client certificates)", ""
	}
	if ann("enable-global-auth") == "false" {
		return "", ""
	}
	if cfg.GlobalAuthURL != "" {
		return "global-auth-url " + cfg.GlobalAuthURL + " (ConfigMap " + cfg.ConfigMap + ")", ""
	}
	return "", cfg.GlobalAuthUnknown
}

// nginxIngressRoute models an Ingress as ingress-nginx serves it.
func (s *builder) nginxIngressRoute(ing networkingv1.Ingress) Route {
	r := Route{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Object: kubeobj.Ref("Ingress", ing.Namespace, ing.Name),
		Served: true, Reviewed: ing.Annotations[ReviewedAnnotation] == "reviewed"}
	if why := s.nginxNotServed(ing); why != "" {
		r.Served, r.NotServed = false, why
	}
	for _, rule := range ing.Spec.Rules {
		r.Hosts = append(r.Hosts, strings.TrimSuffix(strings.ToLower(rule.Host), "."))
	}
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend != nil && r.Served {
		if s.Nginx.DisableCatchAll {
			r.Served, r.NotServed = false, "it has only a defaultBackend and the controller runs --disable-catch-all"
		} else {
			r.CatchAll = true
		}
	}
	r.Backends = ingressBackends(ing)
	auth, unsure := s.nginxAuth(ing)
	if auth != "" {
		r.Middlewares = append(r.Middlewares, MiddlewareRef{Raw: auth, Found: true, Auth: "ingress-nginx"})
	}
	r.AuthUnsure = unsure
	s.reach(&r, s.implementationEntryPoints(), true)
	return r
}

// implementationEntryPoints are, for a proxy other than Traefik, the TCP ports of the Services
// on the node addresses that select the proxy's pods: every route it serves is reached on each.
func (s *builder) implementationEntryPoints() []EntryPoint {
	var out []EntryPoint
	for _, svc := range s.proxyFacingServices() {
		if len(svc.Spec.ExternalIPs) == 0 {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if kubeobj.Protocol(sp.Protocol) != corev1.ProtocolTCP {
				continue
			}
			name := sp.Name
			if name == "" {
				name = strconv.Itoa(int(sp.Port))
			}
			out = append(out, EntryPoint{Name: name, Port: sp.Port, Protocol: corev1.ProtocolTCP,
				LAN: []string{fmt.Sprintf("%d/TCP of %s", sp.Port, kubeobj.ServiceRef(svc))}})
		}
	}
	return out
}
