// Package kubeobj is how the plugin reads Kubernetes objects: references in findings,
// readiness, endpoints, ports and their protocol. One home for each reading, so that discovery,
// the proxy's route model and the checks never read the same field two ways.
package kubeobj

import (
	"encoding/csv"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubectl/pkg/util/podutils"
)

// Ref names an object in findings: "Service traefik/traefik".
func Ref(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return fmt.Sprintf("%s %s/%s", kind, namespace, name)
}

// ServiceRef is Ref for a Service.
func ServiceRef(svc *corev1.Service) string { return Ref("Service", svc.Namespace, svc.Name) }

// ConfigMapRef is Ref for a ConfigMap.
func ConfigMapRef(cm *corev1.ConfigMap) string { return Ref("ConfigMap", cm.Namespace, cm.Name) }

// NodeReady reports the node's Ready condition.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeOS is the node's operating system from its label, else its node info.
func NodeOS(n *corev1.Node) string {
	if os := n.Labels[corev1.LabelOSStable]; os != "" {
		return os
	}
	return n.Status.NodeInfo.OperatingSystem
}

// NodeInternalIPs are the node's InternalIP addresses (unmapped).
func NodeInternalIPs(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, na := range n.Status.Addresses {
		if na.Type != corev1.NodeInternalIP {
			continue
		}
		if a, err := netip.ParseAddr(na.Address); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// NodesWithInternalIP returns the nodes that list addr as an InternalIP.
func NodesWithInternalIP(nodes []corev1.Node, addr netip.Addr) []*corev1.Node {
	var out []*corev1.Node
	for i := range nodes {
		if slices.Contains(NodeInternalIPs(&nodes[i]), addr.Unmap()) {
			out = append(out, &nodes[i])
		}
	}
	return out
}

// AddressObject names the node whose InternalIP is addr, "node-2 (10.0.10.12)", or the address
// alone when no node carries it.
func AddressObject(nodes []corev1.Node, addr netip.Addr) string {
	if ns := NodesWithInternalIP(nodes, addr); len(ns) > 0 {
		return fmt.Sprintf("%s (%s)", ns[0].Name, addr)
	}
	return addr.String()
}

// PodReady is kubectl's own reading of readiness (the Ready condition), for a pod that runs
// and is not being deleted.
func PodReady(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podutils.IsPodReady(p)
}

// PodState is "ready", or "not ready (REASON)" from the first waiting container, else the phase.
func PodState(p *corev1.Pod) string {
	if PodReady(p) {
		return "ready"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return "not ready (" + w.Reason + ")"
		}
	}
	return "not ready (" + string(p.Status.Phase) + ")"
}

// Endpoint is one ready endpoint of a Service and the node it runs on.
type Endpoint struct {
	Address string
	Node    string
	Pod     string
}

// ReadyEndpoints lists the ready endpoints of slices, each address once. A nil ready
// condition counts as ready, as the EndpointSlice API asks consumers to read it; terminating
// endpoints do not.
func ReadyEndpoints(eps []discoveryv1.EndpointSlice) []Endpoint {
	var out []Endpoint
	seen := map[string]bool{}
	for _, s := range eps {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if e.Conditions.Terminating != nil && *e.Conditions.Terminating {
				continue
			}
			for _, a := range e.Addresses {
				if seen[a] {
					continue
				}
				seen[a] = true
				ep := Endpoint{Address: a}
				if e.NodeName != nil {
					ep.Node = *e.NodeName
				}
				if e.TargetRef != nil {
					ep.Pod = e.TargetRef.Name
				}
				out = append(out, ep)
			}
		}
	}
	return out
}

// SlicePorts lists the ports the slices publish, as "1053/UDP".
func SlicePorts(eps []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range eps {
		for _, p := range s.Ports {
			if p.Port == nil {
				continue
			}
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = Protocol(*p.Protocol)
			}
			v := fmt.Sprintf("%d/%s", *p.Port, proto)
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Protocol is p with the API's default: an empty protocol is TCP.
func Protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// ServicePortFor returns the Service port numbered port with the given protocol.
func ServicePortFor(svc *corev1.Service, port int32, proto corev1.Protocol) (corev1.ServicePort, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Port == port && Protocol(p.Protocol) == proto {
			return p, true
		}
	}
	return corev1.ServicePort{}, false
}

// DescribePorts lists a Service's ports, "443/TCP -> websecure".
func DescribePorts(svc *corev1.Service) []string {
	out := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%d/%s -> %s", p.Port, Protocol(p.Protocol), p.TargetPort.String()))
	}
	return out
}

// ExternalAddrs parses a Service's externalIPs, skipping invalid ones (unmapped).
func ExternalAddrs(svc *corev1.Service) []netip.Addr {
	if svc == nil {
		return nil
	}
	var out []netip.Addr
	for _, ip := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// PodSpecOf returns the pod template's spec, else the spec of the first pod.
func PodSpecOf(template *corev1.PodTemplateSpec, pods []corev1.Pod) *corev1.PodSpec {
	if template != nil {
		return &template.Spec
	}
	if len(pods) > 0 {
		return &pods[0].Spec
	}
	return nil
}

// Target is what a Service port's targetPort means in the pods.
type Target struct {
	Port      int32  // 0 when unresolved
	Container string // the container declaring it, when declared
	Problem   string
}

// ResolveTargetPort maps a Service port to the container port it reaches, as kube-proxy and
// the EndpointSlice controller do: a named targetPort must be declared by a container with the
// same protocol; a numeric one is taken as is (a container need not declare it), but is
// compared with the declared ports of that protocol.
func ResolveTargetPort(sp corev1.ServicePort, spec *corev1.PodSpec) Target {
	proto := Protocol(sp.Protocol)
	tp := sp.TargetPort
	if tp.Type == intstr.Int && tp.IntVal == 0 && tp.StrVal == "" {
		tp = intstr.FromInt32(sp.Port) // unset targetPort defaults to port
	}
	if spec == nil {
		if tp.Type == intstr.Int {
			return Target{Port: tp.IntVal}
		}
		return Target{Problem: fmt.Sprintf("targetPort %q cannot be resolved without a pod", tp.StrVal)}
	}
	var declared []string
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			if Protocol(cp.Protocol) != proto {
				continue
			}
			declared = append(declared, fmt.Sprintf("%s %d/%s", cp.Name, cp.ContainerPort, proto))
			if (tp.Type == intstr.String && cp.Name == tp.StrVal) || (tp.Type == intstr.Int && cp.ContainerPort == tp.IntVal) {
				return Target{Port: cp.ContainerPort, Container: c.Name}
			}
		}
	}
	if tp.Type == intstr.String {
		return Target{Problem: fmt.Sprintf("targetPort %q names no %s container port (declared: %s)", tp.StrVal, proto, joinOrNone(declared))}
	}
	if len(declared) > 0 {
		return Target{Port: tp.IntVal, Problem: fmt.Sprintf("targetPort %d is not a declared %s container port (declared: %s)", tp.IntVal, proto, strings.Join(declared, ", "))}
	}
	return Target{Port: tp.IntVal}
}

func joinOrNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// SplitFlagList splits a comma-separated flag value of a container's command line (pflag
// reads string slices as CSV).
func SplitFlagList(v string) []string {
	rec, err := csv.NewReader(strings.NewReader(v)).Read()
	if err != nil {
		rec = strings.Split(v, ",")
	}
	var out []string
	for _, x := range rec {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ImageNames reports whether the repository name of image (its last path element, without tag
// or digest) holds word.
func ImageNames(image, word string) bool {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		repo = repo[i+1:]
	}
	repo, _, _ = strings.Cut(repo, ":")
	return strings.Contains(strings.ToLower(repo), word)
}
