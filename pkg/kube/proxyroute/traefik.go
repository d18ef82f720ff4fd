package proxyroute

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// TraefikConfig is what the route model needs of the proxy's static configuration, read from
// the Traefik container of the proxy's pods (the Deployment's template, else a pod): its entry
// points and which of them the LAN reaches, and the provider options that decide whether
// Traefik accepts a route. Traefik reads its static configuration from CLI arguments, the
// environment or a file (traefik/traefik pkg/cli): only the arguments are read here; when the
// pod also points Traefik at a file or sets TRAEFIK_* variables, what they add is not known.
type TraefikConfig struct {
	// Found: the proxy's pods run a Traefik container. Source names it; Image is its image.
	Found  bool
	Source string
	Image  string
	// EntryPointsKnown: the entry points were read (from --entryPoints.NAME.address, else from
	// the container ports the Traefik chart names after its entry points). EntryPointsWhy says
	// why not, or what they were read from.
	EntryPointsKnown bool
	EntryPointsWhy   string
	EntryPoints      []EntryPoint
	// AllowCrossNamespace is --providers.kubernetescrd.allowCrossNamespace (Traefik's default is
	// false); AllowCrossNamespaceKnown is false when a configuration file or the environment
	// may set it.
	AllowCrossNamespace      bool
	AllowCrossNamespaceKnown bool
	// CRDIngressClass and IngressClass are the providers' ingressClass options ("" = unset).
	CRDIngressClass string
	IngressClass    string
	// CrossProviderNamespaces is the ingress provider's crossProviderNamespaces (nil: unset,
	// every namespace may name middlewares).
	CrossProviderNamespaces []string
	// Gateway: the Kubernetes Gateway provider is enabled. CRD: the Kubernetes CRD provider is,
	// which is what registers traefik.io Middlewares as the Gateway provider's ExtensionRef
	// filters (traefik/traefik v3.7.9 pkg/config/static/static_config.go: FillExtensionBuilderRegistry
	// only when providers.kubernetesCRD is set).
	Gateway bool
	CRD     bool
	// Internal maps an entry point to what Traefik itself serves on it (its API and dashboard,
	// ping, Prometheus metrics): reached from the LAN, those answer without any router.
	Internal map[string][]string
	// Unsure lists what may change the configuration without being read (a file, TRAEFIK_*).
	Unsure []string
}

// EntryPoint is one Traefik entry point and how the LAN reaches it.
type EntryPoint struct {
	Name     string
	Port     int32
	Protocol corev1.Protocol
	// AsDefault: --entryPoints.NAME.asDefault; HTTPTLS: --entryPoints.NAME.http.tls.
	AsDefault bool
	HTTPTLS   bool
	// RedirectTo is --entryPoints.NAME.http.redirections.entryPoint.to ("" when the entry point
	// does not redirect): Traefik then adds a router on it that redirects every request with a
	// Host (rule HostRegexp(`^.+$`), service noop@internal) at RedirectPriority
	// (...entryPoint.priority, default math.MaxInt - 1), above any router whose priority is
	// lower. ACMEBypass (--entryPoints.NAME.allowACMEByPass) leaves
	// /.well-known/acme-challenge/ out of that rule (traefik/traefik v3.7.9
	// pkg/provider/traefik/internal.go Provider.redirection, pkg/config/static/entrypoints.go
	// RedirectEntryPoint.SetDefaults).
	RedirectTo       string
	RedirectPriority int
	ACMEBypass       bool
	// Middlewares are --entryPoints.NAME.http.middlewares: Traefik puts them in front of every
	// router on the entry point (pkg/provider/traefik/internal.go makes them the entry point's
	// model, which pkg/server/aggregator.go applyModel gives each router).
	Middlewares []string
	// LAN lists how it is reached on the node addresses: "443/TCP of Service traefik/traefik",
	// "hostPort 9000", "hostNetwork". Empty: not from the LAN addresses.
	LAN []string
}

// Exposed reports whether the LAN reaches the entry point.
func (e EntryPoint) Exposed() bool { return len(e.LAN) > 0 }

// Label is "websecure (:8443/TCP)".
func (e EntryPoint) Label() string { return fmt.Sprintf("%s (:%d/%s)", e.Name, e.Port, e.Protocol) }

// internalEntryPoint is the entry point Traefik keeps out of the default ones
// (traefik/traefik pkg/config/static/static_config.go DefaultInternalEntryPointName).
const internalEntryPoint = "traefik"

// EntryPoint returns the entry point named name (Traefik's names, compared without case: the
// CLI's keys are read case-insensitively).
func (c TraefikConfig) EntryPoint(name string) (EntryPoint, bool) {
	for _, e := range c.EntryPoints {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return EntryPoint{}, false
}

// DefaultEntryPoints are the entry points of a router that names none: the ones marked
// asDefault when any is, else every TCP entry point but the internal "traefik" one
// (traefik/traefik cmd/traefik/traefik.go getDefaultsEntrypoints).
func (c TraefikConfig) DefaultEntryPoints() []EntryPoint {
	marked := slices.ContainsFunc(c.EntryPoints, func(e EntryPoint) bool { return e.AsDefault })
	var out []EntryPoint
	for _, e := range c.EntryPoints {
		if marked && !e.AsDefault {
			continue
		}
		if e.Protocol != corev1.ProtocolUDP && e.Name != internalEntryPoint {
			out = append(out, e)
		}
	}
	return out
}

// EntryPointForListener is the entry point a Gateway listener on port binds to: the one whose
// address ends with the port, skipping for an HTTP listener those with an HTTP TLS
// configuration (traefik/traefik pkg/provider/kubernetes/gateway/kubernetes.go entryPointName).
func (c TraefikConfig) EntryPointForListener(port int32, protocol string) (EntryPoint, bool) {
	for _, e := range c.EntryPoints {
		if e.Port != port {
			continue
		}
		if protocol == "HTTP" && e.HTTPTLS {
			continue
		}
		return e, true
	}
	return EntryPoint{}, false
}

// Version is the Traefik version the image's tag names ("v3.1.2"; the official images are
// tagged v3.1.2 and 3.1.2), "" when the tag is not a full version (latest, v3, a digest only,
// a tag with a suffix such as -alpine is read without it).
func (c TraefikConfig) Version() string {
	repo, _, _ := strings.Cut(c.Image, "@")
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		repo = repo[i+1:]
	}
	_, tag, ok := strings.Cut(repo, ":")
	if !ok {
		return ""
	}
	tag, _, _ = strings.Cut(tag, "-")
	if !strings.HasPrefix(tag, "v") {
		tag = "v" + tag
	}
	if !semver.IsValid(tag) || semver.Canonical(tag) != tag {
		return ""
	}
	return tag
}

// traefikContainer finds the Traefik container of a pod spec (its image names traefik).
func traefikContainer(spec *corev1.PodSpec) (corev1.Container, bool) {
	if spec == nil {
		return corev1.Container{}, false
	}
	for _, c := range spec.Containers {
		if kubeobj.ImageNames(c.Image, "traefik") {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// traefikArgs reads Traefik's CLI arguments as lower-case keys and values: "--key=value", and
// "--key" alone for a boolean (paerser's flag parser, which Traefik uses, reads "--flag" as
// true). Keys are compared without case, as paerser does.
func traefikArgs(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !hasValue {
			v = "true"
		}
		out[strings.ToLower(k)] = v
	}
	return out
}

// readTraefikConfig reads the static configuration of the proxy's Traefik and which entry
// points the LAN reaches.
func (s *builder) readTraefikConfig() TraefikConfig {
	var tmpl *corev1.PodTemplateSpec
	if s.ProxyWorkload != nil {
		tmpl = &s.ProxyWorkload.Spec.Template
	}
	spec := kubeobj.PodSpecOf(tmpl, s.ProxyPods)
	c, ok := traefikContainer(spec)
	if !ok {
		return TraefikConfig{EntryPointsWhy: "no Traefik container was found in the proxy's pods"}
	}
	cfg := TraefikConfig{Found: true, Source: "container " + c.Name, Image: c.Image}
	if s.ProxyWorkload != nil {
		cfg.Source = kubeobj.Ref("Deployment", s.ProxyWorkload.Namespace, s.ProxyWorkload.Name) + " " + cfg.Source
	}
	args := traefikArgs(c)
	for k := range args {
		if k == "configfile" {
			cfg.Unsure = append(cfg.Unsure, "--configFile="+args[k])
		}
	}
	for _, e := range c.Env {
		if strings.HasPrefix(strings.ToUpper(e.Name), "TRAEFIK_") {
			cfg.Unsure = append(cfg.Unsure, "the environment variable "+e.Name)
		}
	}
	sort.Strings(cfg.Unsure)
	cfg.EntryPoints, cfg.EntryPointsWhy = entryPointsOf(args, c)
	cfg.EntryPointsKnown = cfg.EntryPoints != nil
	if cfg.EntryPointsKnown && len(cfg.Unsure) > 0 {
		cfg.EntryPointsWhy += "; " + strings.Join(cfg.Unsure, ", ") + " may define more"
	}
	if v, set := args["providers.kubernetescrd.allowcrossnamespace"]; set {
		cfg.AllowCrossNamespace, _ = strconv.ParseBool(v)
		cfg.AllowCrossNamespaceKnown = true
	} else {
		// Traefik's default (pkg/provider/kubernetes/crd/kubernetes.go isNamespaceAllowed
		// allows cross-namespace references only with AllowCrossNamespace).
		cfg.AllowCrossNamespaceKnown = len(cfg.Unsure) == 0
	}
	cfg.CRDIngressClass = args["providers.kubernetescrd.ingressclass"]
	cfg.IngressClass = args["providers.kubernetesingress.ingressclass"]
	if v, set := args["providers.kubernetesingress.crossprovidernamespaces"]; set {
		cfg.CrossProviderNamespaces = append([]string{}, kubeobj.SplitFlagList(v)...)
	}
	cfg.Gateway = providerEnabled(args, "providers.kubernetesgateway")
	cfg.CRD = providerEnabled(args, "providers.kubernetescrd")
	cfg.Internal = internalServices(args)
	s.exposeEntryPoints(&cfg, spec)
	return cfg
}

// internalServices says what Traefik serves itself on which entry point: the API and
// dashboard with --api.insecure on "traefik"; ping and Prometheus metrics on their
// entryPoint option, "traefik" by default; the REST provider with --providers.rest.insecure
// (traefik/traefik v3.7.9 pkg/config/static/static_config.go SetEffectiveConfiguration, which
// creates the traefik entry point on :8080 for them; pkg/ping/ping.go SetDefaults;
// pkg/observability/types/metrics.go Prometheus.SetDefaults, EntryPoint "traefik").
func internalServices(args map[string]string) map[string][]string {
	out := map[string][]string{}
	on := func(k string) bool { return providerEnabled(args, k) }
	if v, ok := args["api.insecure"]; ok && strings.EqualFold(v, "true") {
		out[internalEntryPoint] = append(out[internalEntryPoint], "the API and dashboard (--api.insecure)")
	}
	for _, x := range []struct{ section, what string }{{"ping", "ping"}, {"metrics.prometheus", "Prometheus metrics"}} {
		if !on(x.section) || strings.EqualFold(args[x.section+".manualrouting"], "true") {
			continue
		}
		ep := args[x.section+".entrypoint"]
		if ep == "" {
			ep = internalEntryPoint
		}
		out[strings.ToLower(ep)] = append(out[strings.ToLower(ep)], x.what)
	}
	if v, ok := args["providers.rest.insecure"]; ok && strings.EqualFold(v, "true") {
		out[internalEntryPoint] = append(out[internalEntryPoint], "the REST provider (--providers.rest.insecure)")
	}
	return out
}

// InternalServices says what Traefik serves itself on entry point name (nil: nothing).
func (c TraefikConfig) InternalServices(name string) []string {
	return c.Internal[strings.ToLower(name)]
}

// providerEnabled: a provider section is enabled by its flag alone or =true, or by one of its
// options. Any other value disables it, options included: paerser marks a section node whose
// value is not "true" (any case) Disabled and leaves it nil (github.com/traefik/paerser v0.2.2
// parser/nodes_metadata.go, node.Disabled; element_fill.go fill returns at once).
func providerEnabled(args map[string]string, section string) bool {
	if v, set := args[section]; set {
		return strings.EqualFold(v, "true")
	}
	for k := range args {
		if strings.HasPrefix(k, section+".") {
			return true
		}
	}
	return false
}

// entryPointsOf reads --entryPoints.NAME.address=[HOST]:PORT[/tcp|udp] (traefik/traefik
// pkg/config/static/entrypoints.go GetAddress, GetProtocol: tcp when not written), asDefault and
// http.tls. Without any entry point argument: the Traefik chart names each container port after
// its entry point (traefik-helm-chart templates/_podtemplate.tpl, ports.NAME.port), so the
// ports are read that way; with neither, and no other configuration source, Traefik makes one
// entry point "http" on :80 (pkg/config/static/static_config.go SetEffectiveConfiguration).
func entryPointsOf(args map[string]string, c corev1.Container) ([]EntryPoint, string) {
	byName := map[string]*EntryPoint{}
	prioritySet := map[string]bool{}
	get := func(name string) *EntryPoint {
		if byName[name] == nil {
			byName[name] = &EntryPoint{Name: name, Protocol: corev1.ProtocolTCP}
		}
		return byName[name]
	}
	for k, v := range args {
		rest, ok := strings.CutPrefix(k, "entrypoints.")
		if !ok {
			continue
		}
		name, field, ok := strings.Cut(rest, ".")
		if !ok {
			continue
		}
		if field == "http.redirections.entrypoint.priority" {
			prioritySet[name] = true
		}
		get(name).setArg(field, v)
	}
	var out []EntryPoint
	for _, e := range byName {
		if e.RedirectTo != "" && !prioritySet[e.Name] {
			e.RedirectPriority = math.MaxInt - 1
		}
		if e.Port > 0 {
			out = append(out, *e)
		}
	}
	if len(out) > 0 {
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, "read from the Traefik container's --entryPoints arguments"
	}
	for _, cp := range c.Ports {
		if cp.Name != "" {
			out = append(out, EntryPoint{Name: cp.Name, Port: cp.ContainerPort, Protocol: kubeobj.Protocol(cp.Protocol)})
		}
	}
	if len(out) > 0 {
		return out, "no --entryPoints argument: read from the container's named ports, which the Traefik chart names after its entry points"
	}
	if _, file := args["configfile"]; !file {
		return []EntryPoint{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}, "no entry point is configured: Traefik's default entry point http on :80"
	}
	return nil, "the entry points are in Traefik's configuration file, which is not read"
}

// exposeEntryPoints fills each entry point's LAN: the ports of the proxy Service, and of the
// other Services with externalIPs that select the proxy's pods (the chart's traefik-udp), whose
// target is the entry point's container port; a hostPort; hostNetwork.
func (s *builder) exposeEntryPoints(cfg *TraefikConfig, spec *corev1.PodSpec) {
	for i := range cfg.EntryPoints {
		e := &cfg.EntryPoints[i]
		for _, svc := range s.proxyFacingServices() {
			for _, sp := range svc.Spec.Ports {
				if kubeobj.Protocol(sp.Protocol) != e.Protocol {
					continue
				}
				if t := kubeobj.ResolveTargetPort(sp, spec); t.Port == e.Port {
					e.LAN = append(e.LAN, fmt.Sprintf("%d/%s of %s", sp.Port, e.Protocol, kubeobj.ServiceRef(svc)))
				}
			}
		}
		if spec == nil {
			continue
		}
		if spec.HostNetwork {
			e.LAN = append(e.LAN, "hostNetwork (the pods listen on their nodes' addresses)")
			continue
		}
		for _, c := range spec.Containers {
			for _, cp := range c.Ports {
				if cp.HostPort != 0 && cp.ContainerPort == e.Port && kubeobj.Protocol(cp.Protocol) == e.Protocol {
					e.LAN = append(e.LAN, fmt.Sprintf("hostPort %d", cp.HostPort))
				}
			}
		}
	}
}

// proxyFacingServices are the proxy Service and the other Services with externalIPs in its
// namespace whose selector matches the proxy's pods.
func (s *builder) proxyFacingServices() []*corev1.Service {
	out := []*corev1.Service{s.ProxyService}
	for i := range s.Services {
		svc := &s.Services[i]
		if !sameService(svc, s.ProxyService) && len(svc.Spec.ExternalIPs) > 0 && s.selectsProxyPods(svc) {
			out = append(out, svc)
		}
	}
	return out
}

// selectsProxyPods reports whether svc (in the proxy's namespace) selects the proxy's pods:
// a companion of the proxy Service, like the Traefik chart's <name>-udp for HTTP/3.
func (s *builder) selectsProxyPods(svc *corev1.Service) bool {
	return s.ProxyService != nil && SelectsPodsOf(svc, s.ProxyService.Namespace, s.ProxyWorkload, s.ProxyPods)
}

// SelectsPodsOf reports whether svc, in namespace ns, selects the pods of a workload (its
// template's labels, else a pod's).
func SelectsPodsOf(svc *corev1.Service, ns string, dep *appsv1.Deployment, pods []corev1.Pod) bool {
	var podLabels labels.Set
	switch {
	case svc.Namespace != ns || len(svc.Spec.Selector) == 0:
		return false
	case dep != nil:
		podLabels = dep.Spec.Template.Labels
	case len(pods) > 0:
		podLabels = pods[0].Labels
	default:
		return false
	}
	return labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels)
}

func sameService(a, b *corev1.Service) bool {
	return a != nil && b != nil && a.Namespace == b.Namespace && a.Name == b.Name
}

// setArg sets the field of one --entryPoints.NAME.FIELD=VALUE argument (field lower case).
func (e *EntryPoint) setArg(field, v string) {
	switch field {
	case "address":
		addr, proto, _ := strings.Cut(v, "/")
		i := strings.LastIndex(addr, ":")
		port, err := strconv.ParseInt(addr[i+1:], 10, 32)
		if i < 0 || err != nil {
			return
		}
		e.Port = int32(port)
		if strings.EqualFold(proto, "udp") {
			e.Protocol = corev1.ProtocolUDP
		}
	case "asdefault":
		e.AsDefault, _ = strconv.ParseBool(v)
	case "allowacmebypass":
		e.ACMEBypass, _ = strconv.ParseBool(v)
	case "http.redirections.entrypoint.to":
		e.RedirectTo = v
	case "http.redirections.entrypoint.priority":
		// An unreadable priority is not Traefik's default: it counts as the lowest, so that
		// no route is said to be shadowed by the redirection.
		e.RedirectPriority = math.MinInt
		if p, err := strconv.Atoi(v); err == nil {
			e.RedirectPriority = p
		}
	case "http.middlewares":
		e.Middlewares = kubeobj.SplitFlagList(v)
	default:
		if strings.HasPrefix(field, "http.tls") {
			e.HTTPTLS = true
		}
	}
}
