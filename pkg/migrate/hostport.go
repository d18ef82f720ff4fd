package migrate

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Generate builds the plan to reach form from the setup discovery read.
func Generate(s *kube.Setup, form Form) (*Plan, error) {
	if _, err := ParseForm(string(form)); err != nil {
		return nil, &Error{Message: err.Error()}
	}
	switch {
	case s == nil || s.ProxyService == nil:
		return nil, failf("no proxy Service was found: name it with --proxy-service")
	case s.DNSService == nil:
		return nil, failf("no DNS Service was found: name it with --dns-service")
	case s.Zone.IsZero():
		return nil, failf("no zone was found: name it with --zone")
	}
	addrs, err := nodeAddresses(s)
	if err != nil {
		return nil, err
	}
	answers, err := zoneAnswers(s, addrs, form)
	if err != nil {
		return nil, err
	}
	p := &Plan{Form: form, Zone: s.Zone.FQDN(), Addresses: addrs, ZoneAnswers: answers}
	if s.ProbeHost.Route != "" {
		p.ProbeHost = s.ProbeHost.Name
	}
	p.Source = fmt.Sprintf("%s, %s", kubeobj.Ref("Service", s.ProxyService.Namespace, s.ProxyService.Name), kubeobj.Ref("Service", s.DNSService.Namespace, s.DNSService.Name))
	switch form {
	case ServiceLB:
		return p, serviceLBPlan(s, p)
	case CiliumNodeIPAM:
		return p, ciliumPlan(s, p)
	}
	return p, hostPortPlan(s, p)
}

// hostPortPlan moves the proxy and the DNS to DaemonSets with hostPorts.
func hostPortPlan(s *kube.Setup, p *Plan) error {
	addrs := p.Addresses
	nodes := nodeNames(addrs)
	proxy, err := hostPortPart(s, s.ProxyService, s.ProxyWorkload, nodes, "proxy")
	if err != nil {
		return err
	}
	dns, err := hostPortPart(s, s.DNSService, s.DNSWorkload, nodes, "DNS")
	if err != nil {
		return err
	}
	if o, ok := kube.OwnerOf(s.ProxyWorkload); ok && o.Tool == "Helm" && strings.HasPrefix(o.Chart, "traefik-") {
		v, err := traefikValues(o, proxy)
		if err != nil {
			return err
		}
		p.Values = v
	} else {
		p.Objects = append(p.Objects, proxy.daemonSet, proxy.service)
		if ok {
			p.Notes = append(p.Notes, fmt.Sprintf("%s belongs to %s: the new objects below are plain manifests; "+
				"carry them into what renders it, or %s.", kubeobj.Ref("Deployment", s.ProxyWorkload.Namespace, s.ProxyWorkload.Name), o.Describe(), o.Reverts()))
		}
	}
	p.Objects = append(p.Objects, dns.daemonSet, dns.service)
	if o, ok := kube.OwnerOf(s.DNSWorkload); ok {
		p.Notes = append(p.Notes, fmt.Sprintf("%s belongs to %s: put the DNS's new objects where it renders them "+
			"(for the seed's lan-dns, the Traefik chart's extraObjects).", kubeobj.Ref("Deployment", s.DNSWorkload.Namespace, s.DNSWorkload.Name), o.Describe()))
	}
	// portmap matches a hostPort without hostIP on every local address of the node
	// (containernetworking/plugins v1.10.0 plugins/meta/portmap/portmap_iptables.go: the
	// entry rule `-m addrtype --dst-type LOCAL`, and `-d HOSTIP` only when a hostIP is given);
	// a DaemonSet's one template cannot give each node its own hostIP.
	p.Notes = append(p.Notes, "A hostPort answers on every address of its node (portmap DNATs the port for any local destination when no hostIP is set), "+
		"where the externalIP took only the LAN address: a node with another interface (public, VPN, a second LAN) serves the proxy and the DNS there too; "+
		"filter those interfaces if they must not.")
	p.Notes = append(p.Notes, proxy.notes...)
	p.Notes = append(p.Notes, dns.notes...)
	p.Steps = hostPortSteps(p, proxy, dns)
	return nil
}

// part is one of the two workloads moved to a hostPort DaemonSet.
type part struct {
	oldService  *corev1.Service
	oldWorkload *appsv1.Deployment
	daemonSet   *appsv1.DaemonSet
	service     *corev1.Service
	// hostPorts maps a container port name (or "port/PROTO" for an unnamed one) to its hostPort.
	hostPorts map[string]int32
	notes     []string
}

// hostPortPart turns the workload behind svc into a DaemonSet on nodes whose containers publish
// every port of svc as a hostPort of the same number, and a Service without externalIPs that
// selects only the new pods (doctor's --proxy-service/--dns-service name it before the cut-over).
func hostPortPart(s *kube.Setup, svc *corev1.Service, d *appsv1.Deployment, nodes []string, what string) (*part, error) {
	ref := kubeobj.Ref("Service", svc.Namespace, svc.Name)
	if d == nil {
		return nil, failf("no Deployment backs the %s %s: the plan builds the DaemonSet from the Deployment's pod template (a proxy that already runs as a DaemonSet needs no migration of its workload)", what, ref)
	}
	name := svc.Name + Suffix
	tmpl := *d.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(tmpl.Labels, MigratedLabel, string(HostPort))
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{MigratedLabel: string(HostPort)}}
	if d.Spec.Selector != nil {
		maps.Copy(selector.MatchLabels, d.Spec.Selector.MatchLabels)
		selector.MatchExpressions = d.Spec.Selector.MatchExpressions
	}
	pt := &part{oldService: svc, oldWorkload: d, hostPorts: map[string]int32{}}
	if err := publishPorts(svc, &tmpl.Spec, pt); err != nil {
		return nil, err
	}
	pinToNodes(&tmpl.Spec, nodes)
	pt.tolerate(s, &tmpl.Spec, nodes)
	// One pod per node by construction: a spread constraint or an anti-affinity written for
	// the Deployment's replicas would count the old pods (their labels match) and could keep a
	// DaemonSet pod from its node.
	if len(tmpl.Spec.TopologySpreadConstraints) > 0 || (tmpl.Spec.Affinity != nil && tmpl.Spec.Affinity.PodAntiAffinity != nil) {
		tmpl.Spec.TopologySpreadConstraints = nil
		if tmpl.Spec.Affinity != nil {
			tmpl.Spec.Affinity.PodAntiAffinity = nil
		}
		pt.notes = append(pt.notes, fmt.Sprintf("The %s DaemonSet drops the Deployment's spread constraints and pod anti-affinity: it runs one pod per node by itself, and those rules would count the old pods.", what))
	}
	one := intstr.FromInt32(1)
	zero := intstr.FromInt32(0)
	pt.daemonSet = &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: newMeta(d.ObjectMeta, name),
		Spec: appsv1.DaemonSetSpec{
			Selector: selector,
			Template: tmpl,
			// A surge pod would need the node's hostPorts while the old pod holds them: the
			// scheduler's NodePorts filter keeps it Pending (kubernetes
			// pkg/scheduler/framework/plugins/nodeports, fitsPorts), and the rollout stalls.
			// One node at a time, old pod first.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: &zero},
			},
			MinReadySeconds:      d.Spec.MinReadySeconds,
			RevisionHistoryLimit: d.Spec.RevisionHistoryLimit,
		},
	}
	pt.service = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: newMeta(svc.ObjectMeta, name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: withLabel(maps.Clone(svc.Spec.Selector), MigratedLabel, string(HostPort)),
			Ports:    servicePorts(svc.Spec.Ports),
		},
	}
	return pt, nil
}

// newMeta is the new object's metadata: the old one's namespace, labels and annotations
// without what its tools wrote (a Helm release's markers would make the next helm upgrade
// claim or refuse the new object; kubectl's last-applied configuration is the old object's).
func newMeta(old metav1.ObjectMeta, name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: old.Namespace}
	for k, v := range old.Labels {
		if k == "app.kubernetes.io/managed-by" || k == "helm.sh/chart" {
			continue
		}
		m.Labels = withLabel(m.Labels, k, v)
	}
	m.Labels = withLabel(m.Labels, MigratedLabel, string(HostPort))
	for k, v := range old.Annotations {
		if strings.HasPrefix(k, "meta.helm.sh/") || strings.HasPrefix(k, "deployment.kubernetes.io/") ||
			k == "kubectl.kubernetes.io/last-applied-configuration" || strings.HasPrefix(k, "objectset.rio.cattle.io/") ||
			strings.HasPrefix(k, "argocd.argoproj.io/") {
			continue
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
	return m
}

func withLabel(l map[string]string, k, v string) map[string]string {
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	return l
}

// servicePorts are the old Service's ports as a ClusterIP Service's (no nodePort).
func servicePorts(ports []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(ports))
	for i, p := range ports {
		out[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort, AppProtocol: p.AppProtocol}
	}
	return out
}

// publishPorts sets, for every port of svc, the hostPort of the container port its targetPort
// names: the node's port P then reaches the pod's port as the Service's port P did. The kubelet
// hands hostPorts to the CNI as portMappings; the portmap plugin DNATs the node's local
// addresses' port to the pod (containernetworking/plugins plugins/meta/portmap, hostIP unset:
// `-m addrtype --dst-type LOCAL`).
func publishPorts(svc *corev1.Service, spec *corev1.PodSpec, pt *part) error {
	for _, sp := range svc.Spec.Ports {
		proto := sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ci, pi, ok := containerPort(spec, sp.TargetPort, sp.Port, proto)
		if !ok {
			if sp.TargetPort.Type == intstr.String {
				return failf("%s port %d targets %q, which no container of its pods declares: the hostPort has no container port to land on",
					kubeobj.Ref("Service", svc.Namespace, svc.Name), sp.Port, sp.TargetPort.StrVal)
			}
			// A numeric targetPort need not be declared; the hostPort needs a declared port.
			c := &spec.Containers[0]
			num := sp.TargetPort.IntVal
			if num == 0 {
				num = sp.Port
			}
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: num, Protocol: proto})
			ci, pi = 0, len(c.Ports)-1
		}
		cp := &spec.Containers[ci].Ports[pi]
		cp.HostPort = sp.Port
		key := cp.Name
		if key == "" {
			key = fmt.Sprintf("%d/%s", cp.ContainerPort, proto)
		}
		pt.hostPorts[key] = sp.Port
	}
	return nil
}

// containerPort finds the container port a Service port's targetPort names (a name, or a
// number; unset means the Service port's number) with the protocol.
func containerPort(spec *corev1.PodSpec, target intstr.IntOrString, port int32, proto corev1.Protocol) (int, int, bool) {
	for ci, c := range spec.Containers {
		for pi, cp := range c.Ports {
			p := cp.Protocol
			if p == "" {
				p = corev1.ProtocolTCP
			}
			if p != proto {
				continue
			}
			switch {
			case target.Type == intstr.String && target.StrVal != "" && cp.Name == target.StrVal:
				return ci, pi, true
			case target.Type == intstr.Int && target.IntVal != 0 && cp.ContainerPort == target.IntVal:
				return ci, pi, true
			case target.Type == intstr.Int && target.IntVal == 0 && cp.ContainerPort == port:
				return ci, pi, true
			}
		}
	}
	return 0, 0, false
}

// pinToNodes requires the nodes by name: one node selector term per node, each with
// `matchFields metadata.name In [node]` (the DaemonSet controller schedules its pods with the
// same kind of term, pkg/controller/daemon/util ReplaceDaemonSetPodNodeNameNodeAffinity). The
// API server allows a single value for a field selector requirement with In
// (kubernetes v1.37.2 pkg/apis/core/validation ValidateNodeFieldSelectorRequirement: "must be
// only one value when `operator` is 'In' or 'NotIn' for node field selector"; the lab's API
// server refused a list), and terms are ORed, requirements within a term ANDed: each term the
// template already requires is kept once per node, with that node's name added.
func pinToNodes(spec *corev1.PodSpec, nodes []string) {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na == nil {
		na = &corev1.NodeAffinity{}
		spec.Affinity.NodeAffinity = na
	}
	base := []corev1.NodeSelectorTerm{{}}
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil && len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) > 0 {
		base = na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	terms := make([]corev1.NodeSelectorTerm, 0, len(base)*len(nodes))
	for _, b := range base {
		for _, n := range nodes {
			t := *b.DeepCopy()
			t.MatchFields = append(t.MatchFields, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}})
			terms = append(terms, t)
		}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: terms}
}

// tolerate adds a toleration for each NoSchedule/NoExecute taint of the chosen nodes that the
// pods do not tolerate yet: a DaemonSet pod is placed only where it tolerates the taints (the
// controller adds tolerations for the node conditions, not for a control-plane taint).
func (pt *part) tolerate(s *kube.Setup, spec *corev1.PodSpec, nodes []string) {
	var added []string
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if !containsName(nodes, n.Name) {
			continue
		}
		for j := range n.Spec.Taints {
			t := &n.Spec.Taints[j]
			if t.Effect == corev1.TaintEffectPreferNoSchedule || tolerated(spec.Tolerations, t) {
				continue
			}
			tol := corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpExists, Effect: t.Effect}
			if t.Value != "" {
				tol.Operator, tol.Value = corev1.TolerationOpEqual, t.Value
			}
			spec.Tolerations = append(spec.Tolerations, tol)
			added = append(added, fmt.Sprintf("%s on %s", t.ToString(), n.Name))
		}
	}
	if len(added) > 0 {
		sort.Strings(added)
		pt.notes = append(pt.notes, "The new pods tolerate the taints of the nodes that carry the addresses: "+strings.Join(added, ", ")+".")
	}
}

func tolerated(tols []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tols {
		if tols[i].ToleratesTaint(klog.Background(), t, false) {
			return true
		}
	}
	return false
}

func containsName(list []string, s string) bool { return slices.Contains(list, s) }

// Manifest is the new objects as one YAML stream, marshalled.
func (p *Plan) Manifest() string {
	objs := make([]any, len(p.Objects))
	for i, o := range p.Objects {
		objs[i] = withoutStatus(o)
	}
	return remedy.YAML(objs...)
}

// withoutStatus is o as a map without its status: a manifest states the spec only (a
// DaemonSet's status counters are not pointers, so they would print as zeros).
func withoutStatus(o runtime.Object) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		panic(err) // typed API objects always convert
	}
	delete(m, "status")
	return m
}

// refOf is a runtime.Object list's kinds and names, for the steps' text.
func refOf(o runtime.Object) string {
	switch x := o.(type) {
	case *appsv1.DaemonSet:
		return kubeobj.Ref("DaemonSet", x.Namespace, x.Name)
	case *corev1.Service:
		return kubeobj.Ref("Service", x.Namespace, x.Name)
	}
	return fmt.Sprintf("%T", o)
}
