package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
)

// Discover reads the cluster once and finds the LAN-access setup (DESIGN 3): the proxy
// Service (externalIPs, port 443), the DNS Service (externalIPs, port 53), the ConfigMap the
// DNS pods mount and the zone of its `template IN A` block, with what the checks need around
// them. It makes a fixed number of paginated LIST calls whatever the size of the cluster.
//
// The Services are read and the two picked first; every other read (29 on the healthy lab:
// the workloads, the ConfigMaps, the nodes, the routes, the admission objects, the custom
// resources, the dataplane...) is then made side by side, at most maxReads at once (fork).
// What they find is taken in, and their errors judged, in one fixed order, the order they
// were once read in one after the other: the Setup and the error do not depend on which
// answer came first, and a dead context ends every read under way. When the Corefile or the
// zone cannot be settled (a usage error), the other reads have been made as well and are
// dropped: one wasted round of reads on a misconfigured cluster buys the healthy one's time.
//
// Errors: a *UsageError (exit 2) when a named object does not exist or discovery finds none
// or several candidates, naming the flag; any other error means the API could not be read
// (exit 3). A forbidden read does not fail discovery: it is recorded in Setup.Partial so the
// checks that need it SKIP with the reason. A custom resource whose CRD is not installed is
// recorded as false in Setup.Installed. dyn may be nil: custom resources are then not read.
//
// API warnings are left to the caller: set rest.Config.WarningHandler to a WarningCollector
// and copy its Warnings() into Setup.APIWarnings. Reads rarely carry warnings; the
// externalIPs deprecation warning is only sent on writes (LA106 explains it either way).
func Discover(ctx context.Context, client client.Interface, dyn dynamic.Interface, sel Selection) (*Setup, error) {
	d := &discoverer{
		ctx: ctx, client: client, dyn: dyn, sel: sel,
		deployments: map[string][]appsv1.Deployment{},
		configMaps:  map[string][]corev1.ConfigMap{},
		runsImage:   map[string]bool{},
		selected:    map[string][]corev1.Pod{},
		setup: &Setup{
			Partial:        map[string]error{},
			Scope:          sel.Scope(),
			Installed:      map[string]bool{},
			EndpointSlices: map[string][]discoveryv1.EndpointSlice{},
		},
	}
	d.partial, d.installed = d.setup.Partial, d.setup.Installed
	if err := d.run(); err != nil {
		return nil, err
	}
	return d.setup, nil
}

type discoverer struct {
	ctx    context.Context
	client client.Interface
	dyn    dynamic.Interface
	sel    Selection
	setup  *Setup
	// partial and installed are where reads are recorded as failed, skipped or not installed:
	// Setup.Partial and Setup.Installed, or a step's own maps while it reads beside other
	// steps (fork). Reads look there for what they recorded themselves.
	partial   map[string]error
	installed map[string]bool
	// Per-namespace lists, read once even when the proxy and the DNS share a namespace. Only
	// the discoverer itself uses these four caches (pickServices, and the thens of
	// workloadSteps): a step's read, on its copy, shares them and must not touch them.
	deployments map[string][]appsv1.Deployment
	configMaps  map[string][]corev1.ConfigMap
	// runsImage caches, per "namespace/name image", whether a candidate Service selects pods
	// running that image (read only when candidates must be told apart).
	runsImage map[string]bool
	// selected caches, per Service "namespace/name", the pods it selects (read for the
	// candidates only).
	selected map[string][]corev1.Pod
}

func (d *discoverer) run() error {
	s := d.setup
	if err := d.readServices(); err != nil {
		return err
	}
	if err := d.pickServices(); err != nil {
		return err
	}
	// The Services are picked: everything else is read at once. The ConfigMap, the Corefile
	// and the zone are decided (workloadSteps) before what the other steps read is taken in.
	var kubeProxy dataplaneSources
	steps := slices.Concat(
		reads((*discoverer).askServed),
		d.workloadSteps(),
		reads((*discoverer).readNodes, (*discoverer).readLBPods),
		d.endpointSliceSteps(), d.pdbSteps(), d.routeSteps(), d.admissionSteps(), d.customSteps(),
		reads((*discoverer).readKubeProxy),
		[]step{{
			read:   func(d *discoverer) error { return d.readDataplane(&kubeProxy) },
			then:   func() error { d.addKubeProxySources(kubeProxy); return nil },
			serial: true,
		}},
		reads((*discoverer).readAPIServer, (*discoverer).readNamespaces, (*discoverer).readServerVersion),
	)
	if err := d.fork(steps...); err != nil {
		return err
	}
	d.markCustomScope()
	d.markUnserved()
	s.DeriveModels(d.sel.Host)
	return nil
}

// askServed asks which API groups and versions are served (ServedOnly) before the custom
// resources' steps need it, so that their reads do not wait for that question in turn.
func (d *discoverer) askServed() error {
	if d.dyn != nil {
		servedKnown(d.dyn, schema.GroupVersion{})
	}
	return nil
}

// readServerVersion asks the API server's version (left empty when it does not answer: the
// report then does not show it).
func (d *discoverer) readServerVersion() error {
	if v, err := d.client.Discovery().ServerVersion(); err == nil && v != nil {
		d.setup.ServerVersion = v.GitVersion
	}
	return nil
}

// core handles the error of a read the setup depends on: forbidden is recorded, anything
// else (unreachable, timeout, unauthorized) ends discovery.
func (d *discoverer) core(key string, err error) error {
	if apierrors.IsForbidden(err) {
		d.partial[key] = err
		return nil
	}
	return fmt.Errorf("list %s: %w", key, err)
}

// optional handles the error of a read only some checks use: not installed is normal, other
// failures are recorded; only a dead context ends discovery.
func (d *discoverer) optional(key string, err error) error {
	switch {
	case isDead(d.ctx, err):
		return fmt.Errorf("list %s: %w", key, err)
	case IsNotInstalled(err):
		d.installed[key] = false
	default:
		d.partial[key] = err
	}
	return nil
}

// readServices lists the Services: in the namespaces of Setup.Scope when discovery stays in
// some, else cluster-wide. When the cluster-wide list is forbidden, discovery stays in the
// namespaces the user named, else in the kubeconfig context's namespace (as kubectl would).
func (d *discoverer) readServices() error {
	key := ReadKey("", "services", "")
	if d.outOfScope(key, "") {
		return d.readServicesIn(d.setup.Scope)
	}
	all, err := listServices(d.ctx, d.client, "", d.relevantService)
	if err == nil {
		d.setup.Services = all
		return nil
	}
	if !apierrors.IsForbidden(err) {
		return fmt.Errorf("list %s: %w", key, err)
	}
	d.partial[key] = err
	namespaces := d.namedNamespaces()
	if len(namespaces) == 0 && d.sel.KubeconfigNamespace != "" && !d.sel.AllNamespaces {
		namespaces = []string{d.sel.KubeconfigNamespace}
	}
	if len(namespaces) == 0 {
		return &UsageError{
			Message: "cannot list Services in all namespaces (forbidden), so the setup cannot be discovered",
			Fix:     "name the namespace with -n NAMESPACE, or the Services with --proxy-service and --dns-service NAMESPACE/NAME",
		}
	}
	// The identity reads namespaces, not the cluster: the other reads stay there too.
	d.setup.Scope = namespaces
	return d.readServicesIn(namespaces)
}

func (d *discoverer) readServicesIn(namespaces []string) error {
	for _, ns := range namespaces {
		svcs, err := listServices(d.ctx, d.client, ns, d.relevantService)
		if err != nil {
			if err := d.core(ReadKey("", "services", ns), err); err != nil {
				return err
			}
			continue
		}
		d.setup.Services = append(d.setup.Services, svcs...)
	}
	return nil
}

// relevantService tells which Services discovery keeps: those that claim an address (the
// candidates, and what LA106 compares for interception) and those named by the flags. The
// thousands of plain ClusterIP Services of a large cluster are dropped page by page.
func (d *discoverer) relevantService(svc *corev1.Service) bool {
	if len(svc.Spec.ExternalIPs) > 0 || svc.Spec.LoadBalancerIP != "" || len(svc.Status.LoadBalancer.Ingress) > 0 {
		return true
	}
	// A Service whose pods may map the role's port as a hostPort (the forms after externalIPs,
	// issue 26): few Services expose 443 or 53.
	if len(svc.Spec.Selector) > 0 && (proxyRole.candidate(svc) || dnsRole.candidate(svc)) {
		return true
	}
	for _, name := range []string{d.sel.ProxyService, d.sel.DNSService} {
		if name == "" {
			continue
		}
		if _, n := splitName(name, ""); n == svc.Name {
			return true
		}
	}
	return false
}

// namedNamespaces are the namespaces the user named, through -n or NAMESPACE/NAME flags.
func (d *discoverer) namedNamespaces() []string {
	var out []string
	add := func(ns string) {
		if ns != "" && !containsString(out, ns) {
			out = append(out, ns)
		}
	}
	if !d.sel.AllNamespaces {
		add(d.sel.Namespace)
	}
	for _, name := range []string{d.sel.ProxyService, d.sel.DNSService} {
		ns, _ := splitName(name, "")
		add(ns)
	}
	sort.Strings(out)
	return out
}

// workloadSteps read the pods the proxy and the DNS Services select, the Deployments of their
// namespaces (once when they share one) and the ConfigMaps readCorefile looks in; then they
// take each Service's Deployment (the one whose template its pods come from, nil if none), the
// Corefile and the zone. A Service without selector has hand-made endpoints: nothing is read
// for it.
func (d *discoverer) workloadSteps() []step {
	s := d.setup
	var proxyPods, dnsPods []corev1.Pod
	steps := d.serviceWorkloadSteps(s.ProxyService, &proxyPods)
	steps = append(steps, d.serviceWorkloadSteps(s.DNSService, &dnsPods)...)
	ns := s.DNSService.Namespace
	if d.sel.ConfigMap != "" {
		ns, _ = splitName(d.sel.ConfigMap, ns)
	}
	return append(steps, coreList(ReadKey("", "configmaps", ns),
		func(d *discoverer) ([]corev1.ConfigMap, error) { return listConfigMaps(d.ctx, d.client, ns, "") },
		func(cms []corev1.ConfigMap, _ bool) error {
			d.configMaps[ns] = cms
			s.ProxyWorkload, s.ProxyPods = d.workloadOf(s.ProxyService, proxyPods), proxyPods
			s.DNSWorkload, s.DNSPods = d.workloadOf(s.DNSService, dnsPods), dnsPods
			if err := d.readCorefile(); err != nil {
				return err
			}
			return d.pickZone()
		}))
}

// serviceWorkloadSteps read the pods svc selects into pods, and the Deployments of its
// namespace unless an earlier step reads them.
func (d *discoverer) serviceWorkloadSteps(svc *corev1.Service, pods *[]corev1.Pod) []step {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	ns := svc.Namespace
	selector := labels.SelectorFromSet(svc.Spec.Selector).String()
	steps := make([]step, 0, 2)
	steps = append(steps, coreList(ReadKey("", "pods", ns),
		func(d *discoverer) ([]corev1.Pod, error) { return listPods(d.ctx, d.client, ns, selector) },
		func(got []corev1.Pod, _ bool) error { *pods = got; return nil }))
	if _, ok := d.deployments[ns]; ok {
		return steps
	}
	d.deployments[ns] = nil // read by this step
	return append(steps, coreList(ReadKey("apps", "deployments", ns),
		func(d *discoverer) ([]appsv1.Deployment, error) { return listDeployments(d.ctx, d.client, ns) },
		func(deps []appsv1.Deployment, _ bool) error { d.deployments[ns] = deps; return nil }))
}

// workloadOf is the Deployment whose template the pods of svc come from (nil if none).
func (d *discoverer) workloadOf(svc *corev1.Service, pods []corev1.Pod) *appsv1.Deployment {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	return pickDeployment(d.deployments[svc.Namespace], labels.SelectorFromSet(svc.Spec.Selector), pods)
}

func (d *discoverer) configMapsIn(ns string) ([]corev1.ConfigMap, error) {
	if cms, ok := d.configMaps[ns]; ok {
		return cms, nil
	}
	cms, err := listConfigMaps(d.ctx, d.client, ns, "")
	if err != nil {
		if err := d.core(ReadKey("", "configmaps", ns), err); err != nil {
			return nil, err
		}
	}
	d.configMaps[ns] = cms
	return cms, nil
}

func (d *discoverer) readNodes() error {
	if d.outOfScope(ReadKey("", "nodes", ""), "") {
		return nil
	}
	nodes, err := listNodes(d.ctx, d.client)
	if err != nil {
		return d.core(ReadKey("", "nodes", ""), err)
	}
	d.setup.Nodes = nodes
	return nil
}

// endpointSliceSteps read the EndpointSlices of the proxy and the DNS Services (once when
// they are one Service).
func (d *discoverer) endpointSliceSteps() []step {
	var steps []step
	for i, svc := range []*corev1.Service{d.setup.ProxyService, d.setup.DNSService} {
		key := svc.Namespace + "/" + svc.Name
		if i == 1 && key == svcKey(d.setup.ProxyService) {
			continue
		}
		steps = append(steps, coreList(ReadKey("discovery.k8s.io", "endpointslices", svc.Namespace),
			func(d *discoverer) ([]discoveryv1.EndpointSlice, error) {
				return listEndpointSlices(d.ctx, d.client, svc.Namespace, svc.Name)
			},
			func(got []discoveryv1.EndpointSlice, read bool) error {
				if read {
					d.setup.EndpointSlices[key] = got
				}
				return nil
			}))
	}
	return steps
}

// pdbSteps read the PodDisruptionBudgets of the DNS Service's namespace, then of the proxy's.
func (d *discoverer) pdbSteps() []step {
	namespaces := []string{d.setup.DNSService.Namespace}
	if ns := d.setup.ProxyService.Namespace; ns != namespaces[0] {
		namespaces = append(namespaces, ns)
	}
	steps := make([]step, len(namespaces))
	for i, ns := range namespaces {
		steps[i] = coreList(ReadKey("policy", "poddisruptionbudgets", ns),
			func(d *discoverer) ([]policyv1.PodDisruptionBudget, error) { return listPDBs(d.ctx, d.client, ns) },
			func(pdbs []policyv1.PodDisruptionBudget, _ bool) error {
				d.setup.PDBs = append(d.setup.PDBs, pdbs...)
				return nil
			})
	}
	return steps
}

// routeSteps read the Ingresses (in each namespace of Setup.Scope when discovery stays in
// some) and the IngressClasses; then the proxy's own ConfigMap, which the proxy's workload
// names (workloadSteps).
func (d *discoverer) routeSteps() []step {
	return append(reads((*discoverer).readIngresses, (*discoverer).readIngressClasses), step{then: d.readProxyConfigMap})
}

func (d *discoverer) readIngresses() error {
	const group = "networking.k8s.io"
	if !d.outOfScope(ReadKey(group, "ingresses", ""), "") {
		ing, err := listIngresses(d.ctx, d.client, "")
		if err != nil {
			if err := d.optional(ReadKey(group, "ingresses", ""), err); err != nil {
				return err
			}
		}
		d.setup.Ingresses = ing
		return nil
	}
	for _, ns := range d.setup.Scope {
		ing, err := listIngresses(d.ctx, d.client, ns)
		if err != nil {
			if err := d.optional(ReadKey(group, "ingresses", ns), err); err != nil {
				return err
			}
		}
		d.setup.Ingresses = append(d.setup.Ingresses, ing...)
	}
	return nil
}

func (d *discoverer) readIngressClasses() error {
	const group = "networking.k8s.io"
	if d.outOfScope(ReadKey(group, "ingressclasses", ""), "") {
		return nil
	}
	classes, err := listIngressClasses(d.ctx, d.client)
	if err != nil {
		if err := d.optional(ReadKey(group, "ingressclasses", ""), err); err != nil {
			return err
		}
	}
	d.setup.IngressClasses = classes
	return nil
}

// readProxyConfigMap reads the ConfigMap the proxy's controller is told to read (ingress-nginx's
// --configmap, whose global-auth-url authenticates every Ingress): one named GET-like list.
func (d *discoverer) readProxyConfigMap() error {
	s := d.setup
	if s.ProxyService == nil {
		return nil
	}
	var tmpl *corev1.PodTemplateSpec
	if s.ProxyWorkload != nil {
		tmpl = &s.ProxyWorkload.Spec.Template
	}
	ref := proxyroute.NginxConfigMapRef(kubeobj.PodSpecOf(tmpl, s.ProxyPods), s.ProxyService.Namespace)
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || d.outOfScope(ReadKey("", "configmaps", ns), ns) {
		return nil
	}
	cms, err := listConfigMapNamed(d.ctx, d.client, ns, name)
	if err != nil {
		return d.core(ReadKey("", "configmaps", ns), err)
	}
	s.ProxyConfigMaps = cms
	return nil
}

// admissionSteps read the ValidatingWebhookConfigurations, the ValidatingAdmissionPolicies
// and their bindings: cluster-scoped, so none of them when discovery stays in namespaces.
func (d *discoverer) admissionSteps() []step {
	const group = "admissionregistration.k8s.io"
	if d.setup.Scope != nil {
		return reads(func(d *discoverer) error {
			for _, r := range []string{"validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
				d.outOfScope(ReadKey(group, r, ""), "")
			}
			return nil
		})
	}
	return reads(func(d *discoverer) error {
		var err error
		if d.setup.ValidatingWebhooks, err = listWebhooks(d.ctx, d.client); err != nil {
			return d.optional(ReadKey(group, "validatingwebhookconfigurations", ""), err)
		}
		return nil
	}, func(d *discoverer) error {
		var err error
		key := ReadKey(group, "validatingadmissionpolicies", "")
		if d.setup.AdmissionPolicies, err = listAdmissionPolicies(d.ctx, d.client); err != nil {
			return d.optional(key, err)
		}
		d.installed[key] = true
		return nil
	}, func(d *discoverer) error {
		var err error
		if d.setup.AdmissionPolicyBindings, err = listAdmissionPolicyBindings(d.ctx, d.client); err != nil {
			return d.optional(ReadKey(group, "validatingadmissionpolicybindings", ""), err)
		}
		return nil
	})
}

// readKubeProxy reads kubeadm's kube-proxy configuration, where AllowServiceExternalIPs
// may be turned off.
func (d *discoverer) readKubeProxy() error {
	const ns = "kube-system"
	if d.outOfScope(ReadKey("", "configmaps", ns), ns) {
		return nil
	}
	cms, err := listConfigMapNamed(d.ctx, d.client, ns, "kube-proxy")
	if err != nil {
		return d.optional(ReadKey("", "configmaps", ns), err)
	}
	for _, cm := range cms {
		if cm.Name == "kube-proxy" {
			d.setup.KubeProxyConfig = cm.Data["config.conf"]
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	return slices.Contains(list, s)
}

// readAPIServer reads the API server's pods in kube-system (kubeadm's static pod), whose flags
// tell whether the DenyServiceExternalIPs admission plugin is on.
func (d *discoverer) readAPIServer() error {
	const ns = "kube-system"
	if key := ReadKey("", "pods", ns); d.outOfScope(key, ns) {
		d.setup.APIServer = APIServerFlags{Why: fmt.Sprintf("the pods in %s were not read: %v", ns, d.partial[key])}
		return nil
	}
	pods, err := listPods(d.ctx, d.client, ns, APIServerSelector)
	if err != nil {
		d.setup.APIServer = APIServerFlags{Why: fmt.Sprintf("the pods in %s could not be read: %v", ns, err)}
		return d.optional(ReadKey("", "pods", ns), err)
	}
	d.setup.APIServer = readAPIServerFlags(pods)
	return nil
}

// readNamespaces reads the namespaces, whose labels admission policies select on.
func (d *discoverer) readNamespaces() error {
	if d.outOfScope(ReadKey("", "namespaces", ""), "") {
		return nil
	}
	nss, err := listNamespaces(d.ctx, d.client)
	if err != nil {
		return d.optional(ReadKey("", "namespaces", ""), err)
	}
	d.setup.Namespaces = nss
	return nil
}

// markUnserved records as not installed the custom resources discovery did not read whose
// group/version the cluster does not serve (when the dynamic client knows: ServedOnly), so
// that LA001 does not ask permission to read what does not exist.
func (d *discoverer) markUnserved() {
	for _, r := range append(DynamicResources(), GatekeeperConstraint("K8sExternalIPs")) {
		if _, seen := d.installed[r.Key()]; seen {
			continue
		}
		if served, known := servedKnown(d.dyn, r.GVR.GroupVersion()); known && !served {
			d.installed[r.Key()] = false
		}
	}
}

// readLBPods reads k3s ServiceLB's pods of the proxy and DNS Services of type LoadBalancer
// without a loadBalancerClass (svclb-*, in kube-system: k3s-io/k3s
// pkg/cloudprovider/servicelb.go DefaultLBNS), one labelled list per Service.
func (d *discoverer) readLBPods() error {
	const ns = svclbRootNS
	for _, svc := range []*corev1.Service{d.setup.ProxyService, d.setup.DNSService} {
		if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.LoadBalancerClass != nil || len(svc.Spec.ExternalIPs) > 0 {
			continue
		}
		if _, done := d.setup.LBPods[svcKey(svc)]; done {
			continue
		}
		if d.outOfScope(ReadKey("", "pods", ns), ns) {
			return nil
		}
		pods, err := listPods(d.ctx, d.client, ns, SvcLBSelector(svc))
		if err != nil {
			if err := d.optional(ReadKey("", "pods", ns), err); err != nil {
				return err
			}
			continue
		}
		if d.setup.LBPods == nil {
			d.setup.LBPods = map[string][]corev1.Pod{}
		}
		d.setup.LBPods[svcKey(svc)] = pods
	}
	return nil
}
