package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// Shared by the configuration checks LA101-LA107, which read only the discovered Setup.

// noSetup is the outcome when discovery did not run or found no Services: a wiring fault of
// the caller, not a property of the cluster.
func noSetup(env *Env) (engine.Outcome, bool) {
	if env.Setup == nil || env.Setup.ProxyService == nil || env.Setup.DNSService == nil {
		return engine.Outcome{Skip: "the setup was not discovered (name the Services with --proxy-service and --dns-service)"}, true
	}
	return engine.Outcome{}, false
}

// unreadReason says why reads the check needs failed during discovery ("" when all were read).
func unreadReason(env *Env, keys ...string) string {
	var why []string
	for _, k := range keys {
		if err := env.Setup.Unread(k); err != nil {
			why = append(why, fmt.Sprintf("could not read %s: %v", k, err))
		}
	}
	return strings.Join(why, "; ")
}

// partialOutcome keeps what a check found when part of its input could not be read: known
// problems are reported as they are, and a check that found nothing wrong is SKIP with the
// reason rather than PASS, because the unread part may hide a problem.
func partialOutcome(findings []engine.Finding, unread string) engine.Outcome {
	if unread == "" {
		return engine.Outcome{Findings: findings}
	}
	for _, f := range findings {
		if f.Severity != engine.SeverityInfo {
			return engine.Outcome{Findings: append(findings, engine.Finding{Severity: engine.SeverityInfo, Message: "not everything was checked: " + unread})}
		}
	}
	return engine.Outcome{Findings: findings, Skip: unread}
}

func configMapObject(cm *corev1.ConfigMap) string {
	return fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
}

// addrForm is one address as written and what it means.
type addrForm struct {
	Raw  string
	Addr netip.Addr // valid when the text names an address, even non-canonically
	// Problem is "" for a canonical address; otherwise why the text is not one.
	Problem   string
	Canonical bool
}

// readAddr judges one address as written in a Service or a zone answer. Kubernetes accepts
// legacy forms (leading zeros, IPv4-mapped IPv6) for externalIPs and warns about them; other
// tools read them differently (leading zeros are octal for inet_aton), so they are named.
func readAddr(raw string) addrForm {
	f := addrForm{Raw: raw}
	a, err := netip.ParseAddr(raw)
	switch {
	case err == nil && a.Is4In6():
		f.Addr = a.Unmap()
		f.Problem = fmt.Sprintf("IPv4-mapped IPv6 form: write %s", f.Addr)
	case err == nil && a.String() != raw:
		f.Addr = a
		f.Problem = fmt.Sprintf("not in canonical form: write %s", a)
	case err == nil:
		f.Addr, f.Canonical = a, true
	default:
		if sloppy, ok := parseLeadingZeros(raw); ok {
			f.Addr = sloppy
			f.Problem = fmt.Sprintf("leading zeros: write %s", sloppy)
		} else {
			f.Problem = "not an IP address"
		}
	}
	if f.Addr.IsValid() && f.Problem == "" {
		switch {
		case f.Addr.IsUnspecified(), f.Addr.IsLoopback(), f.Addr.IsMulticast(), f.Addr.IsLinkLocalUnicast():
			f.Problem = "not a unicast address a node can carry"
			f.Canonical = false
		}
	}
	return f
}

// parseLeadingZeros reads a dotted IPv4 address whose octets have leading zeros in decimal,
// as Kubernetes' legacy parser does.
func parseLeadingZeros(raw string) (netip.Addr, bool) {
	parts := strings.Split(raw, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	for i, p := range parts {
		t := strings.TrimLeft(p, "0")
		if t == "" && p != "" {
			t = "0"
		}
		parts[i] = t
	}
	a, err := netip.ParseAddr(strings.Join(parts, "."))
	return a, err == nil && a.Is4()
}

// nodesWithInternalIP returns the nodes that list addr as an InternalIP.
func nodesWithInternalIP(nodes []corev1.Node, addr netip.Addr) []*corev1.Node {
	var out []*corev1.Node
	for i := range nodes {
		for _, na := range nodes[i].Status.Addresses {
			if na.Type != corev1.NodeInternalIP {
				continue
			}
			if a, err := netip.ParseAddr(na.Address); err == nil && a.Unmap() == addr {
				out = append(out, &nodes[i])
				break
			}
		}
	}
	return out
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeOS is the node's operating system from its label, else its node info.
func nodeOS(n *corev1.Node) string {
	if os := n.Labels[corev1.LabelOSStable]; os != "" {
		return os
	}
	return n.Status.NodeInfo.OperatingSystem
}

func podIsReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyEndpoint is one ready endpoint of a Service and the node it runs on.
type readyEndpoint struct {
	Address string
	Node    string
	Pod     string
}

// readyEndpoints lists the ready endpoints of slices. A nil ready condition counts as ready,
// as the EndpointSlice API asks consumers to read it.
func readyEndpoints(eps []discoveryv1.EndpointSlice) []readyEndpoint {
	var out []readyEndpoint
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
				ep := readyEndpoint{Address: a}
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

// slicePorts lists the ports the slices publish, as "1053/UDP".
func slicePorts(eps []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range eps {
		for _, p := range s.Ports {
			if p.Port == nil {
				continue
			}
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
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

// podSpecOf returns the pod template of the workload, else the spec of its first pod.
func podSpecOf(template *corev1.PodTemplateSpec, pods []corev1.Pod) *corev1.PodSpec {
	if template != nil {
		return &template.Spec
	}
	if len(pods) > 0 {
		return &pods[0].Spec
	}
	return nil
}

// resolvedTarget is what a Service port's targetPort means in the pods.
type resolvedTarget struct {
	Port      int32  // 0 when unresolved
	Container string // the container declaring it, when declared
	Problem   string
}

// resolveTargetPort maps a Service port to the container port it reaches: a named targetPort
// must be declared by a container with the same protocol; a numeric one is taken as is (a
// container need not declare it), but is checked against declared ports of that protocol.
func resolveTargetPort(sp corev1.ServicePort, spec *corev1.PodSpec) resolvedTarget {
	proto := protocolOrTCP(sp.Protocol)
	tp := sp.TargetPort
	if tp.Type == intstr.Int && tp.IntVal == 0 && tp.StrVal == "" {
		tp = intstr.FromInt32(sp.Port) // unset targetPort defaults to port
	}
	if spec == nil {
		if tp.Type == intstr.Int {
			return resolvedTarget{Port: tp.IntVal}
		}
		return resolvedTarget{Problem: fmt.Sprintf("targetPort %q cannot be resolved without a pod", tp.StrVal)}
	}
	var declared []string
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			if protocolOrTCP(cp.Protocol) != proto {
				continue
			}
			declared = append(declared, fmt.Sprintf("%s %d/%s", cp.Name, cp.ContainerPort, proto))
			if (tp.Type == intstr.String && cp.Name == tp.StrVal) || (tp.Type == intstr.Int && cp.ContainerPort == tp.IntVal) {
				return resolvedTarget{Port: cp.ContainerPort, Container: c.Name}
			}
		}
	}
	if tp.Type == intstr.String {
		return resolvedTarget{Problem: fmt.Sprintf("targetPort %q names no %s container port (declared: %s)", tp.StrVal, proto, joinOrNone(declared))}
	}
	if len(declared) > 0 {
		return resolvedTarget{Port: tp.IntVal, Problem: fmt.Sprintf("targetPort %d is not a declared %s container port (declared: %s)", tp.IntVal, proto, strings.Join(declared, ", "))}
	}
	return resolvedTarget{Port: tp.IntVal}
}

func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func joinOrNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// readsOf names the discovery reads of a namespace for unreadReason.
func readsOf(ns string, resources ...string) []string {
	var out []string
	for _, r := range resources {
		group := ""
		if i := strings.Index(r, "."); i >= 0 {
			r, group = r[:i], r[i+1:]
		}
		out = append(out, kube.ReadKey(group, r, ns))
	}
	return out
}

// svcRef names a Service in findings: "Service traefik/traefik".
func svcRef(svc *corev1.Service) string {
	return fmt.Sprintf("Service %s/%s", svc.Namespace, svc.Name)
}
