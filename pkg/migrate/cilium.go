package migrate

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Cilium's node IPAM load balancer, as cilium/cilium operator/pkg/nodeipam/nodesvclb.go
// reconciles it (the operator runs it with enable-node-ipam, cell.go): a Service of type
// LoadBalancer with loadBalancerClass io.cilium/node gets status.loadBalancer.ingress = the
// addresses of the nodes the annotation io.cilium.nodeipam/match-node-labels selects (a label
// selector, labels.Parse), minus nodes labelled node.kubernetes.io/exclude-from-external-load-
// balancers or tainted ToBeDeletedByClusterAutoscaler (node_predicates.go), and with
// externalTrafficPolicy Local only the nodes with a ready endpoint (getEndpointSliceNodeNames);
// ExternalIPs are published when any selected node has one, else InternalIPs
// (getNodeLoadBalancerIngresses).
const (
	ciliumNodeClass        = "io.cilium/node"
	ciliumMatchNodeLabels  = "io.cilium.nodeipam/match-node-labels"
	excludeFromLBNodeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"
	// EntryLabel marks the address nodes when they have no kubernetes.io/hostname label to
	// select them by.
	EntryLabel = "lanaccess.io/lan-entry"
)

// ciliumPlan gives the proxy and the DNS a LoadBalancer Service each of class io.cilium/node
// on the nodes that carry the addresses; the Deployments stay as they are.
func ciliumPlan(s *kube.Setup, p *Plan) error {
	c := s.Dataplane.Cilium
	if c == nil || (!c.Present && !c.Agent) {
		return failf("Cilium does not run in this cluster (no cilium DaemonSet, no cilium-config): node IPAM is Cilium's operator's (use --to hostport)")
	}
	nodes := nodeNames(p.Addresses)
	selector, first, err := ciliumNodeSelector(s, p.Addresses, nodes)
	if err != nil {
		return err
	}
	ns, _, _ := strings.Cut(strings.TrimPrefix(c.Object, "ConfigMap "), "/")
	check := Step{
		Title: "Check that Cilium's operator runs node IPAM",
		Why: []string{"The operator reconciles class " + ciliumNodeClass + " only with enable-node-ipam (cilium-operator operator/pkg/nodeipam/cell.go; " +
			"the Cilium chart's nodeIPAM.enabled=true writes it into cilium-config). This must print true:"},
		Commands: []string{remedy.Kubectl(ns, "get", "configmap", "cilium-config", "-o", "jsonpath={.data.enable-node-ipam}")},
	}
	proxy, dns := ciliumService(s.ProxyService, selector), ciliumService(s.DNSService, selector)
	if o, ok := kube.OwnerOf(s.ProxyService); ok && o.Tool == "Helm" && strings.HasPrefix(o.Chart, "traefik-") {
		p.Values = traefikLBValues(o, s.ProxyService)
		p.Values.Values = map[string]any{"service": map[string]any{
			"spec":        map[string]any{"type": "LoadBalancer", "loadBalancerClass": ciliumNodeClass, "externalTrafficPolicy": "Cluster"},
			"annotations": map[string]any{ciliumMatchNodeLabels: selector},
		}}
		p.Notes = append(p.Notes, "The proxy's Service is the Helm release's: it becomes a LoadBalancer of class "+ciliumNodeClass+" in place and keeps its externalIPs until the cut-over.")
	} else {
		p.Objects = append(p.Objects, proxy)
	}
	p.Objects = append(p.Objects, dns)
	p.Steps = lbSteps(p, s, append([]Step{check}, first...), dns, "Cilium's node IPAM")
	return nil
}

// ciliumNodeSelector selects the address nodes and no other: by their kubernetes.io/hostname
// labels when each has one, else by a label the first step puts on them. It refuses nodes that
// node IPAM would skip or publish otherwise.
func ciliumNodeSelector(s *kube.Setup, addrs []NodeAddress, nodes []string) (string, []Step, error) {
	var hostnames []string
	for _, a := range addrs {
		n := nodeNamed(s, a.Node)
		if n == nil {
			return "", nil, failf("node %s is not in the cluster's node list", a.Node)
		}
		if _, ok := n.Labels[excludeFromLBNodeLabel]; ok {
			return "", nil, failf("node %s is labelled %s: Cilium's node IPAM skips it (operator/pkg/nodeipam/node_predicates.go)", n.Name, excludeFromLBNodeLabel)
		}
		for _, na := range n.Status.Addresses {
			if na.Type == corev1.NodeExternalIP {
				return "", nil, failf("node %s has ExternalIP %s: Cilium's node IPAM publishes the nodes' ExternalIPs when any has one, not %s (operator/pkg/nodeipam/nodesvclb.go getNodeLoadBalancerIngresses); use --to hostport", n.Name, na.Address, a.Addr)
			}
		}
		if h := n.Labels[corev1.LabelHostname]; h != "" && !containsName(hostnames, h) {
			hostnames = append(hostnames, h)
		}
	}
	if len(hostnames) == len(nodes) && selectsExactly(s, corev1.LabelHostname, hostnames, nodes) {
		sort.Strings(hostnames)
		return fmt.Sprintf("%s in (%s)", corev1.LabelHostname, strings.Join(hostnames, ",")), nil, nil
	}
	label := make([]string, 0, len(nodes))
	for _, n := range nodes {
		label = append(label, remedy.Kubectl("", "label", "node", n, EntryLabel+"=true", "--overwrite"))
	}
	return EntryLabel + "=true", []Step{{
		Title:    "Label the address nodes",
		Why:      []string{"The Services select their nodes by this label (annotation " + ciliumMatchNodeLabels + ")."},
		Commands: label,
	}}, nil
}

// selectsExactly says whether the nodes whose label key is one of values are exactly nodes.
func selectsExactly(s *kube.Setup, key string, values, nodes []string) bool {
	n := 0
	for i := range s.Nodes {
		if containsName(values, s.Nodes[i].Labels[key]) {
			if !containsName(nodes, s.Nodes[i].Name) {
				return false
			}
			n++
		}
	}
	return n == len(nodes)
}

// ciliumService is old as a LoadBalancer Service of class io.cilium/node on the nodes selector
// selects: the same selector (the same pods) and ports, no externalIPs, externalTrafficPolicy
// Cluster (Local would publish only the nodes with a ready endpoint).
func ciliumService(old *corev1.Service, selector string) *corev1.Service {
	m := newMeta(old.ObjectMeta, old.Name+LBSuffix)
	m.Labels[MigratedLabel] = string(CiliumNodeIPAM)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[ciliumMatchNodeLabels] = selector
	class := ciliumNodeClass
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: m,
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass:     &class,
			Selector:              maps.Clone(old.Spec.Selector),
			Ports:                 servicePorts(old.Spec.Ports),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}
}
