package migrate

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// k3s's ServiceLB (klipper-lb), as k3s-io/k3s pkg/cloudprovider/servicelb.go writes and reads
// it: for every Service of type LoadBalancer it runs a DaemonSet (svclb-<name>-<uid8>) whose
// pods publish each Service port as a hostPort of the same number and forward it to the
// ClusterIP (newDaemonSet). Where it runs: when any node carries the label
// svccontroller.k3s.cattle.io/enablelb, only nodes with enablelb=true, and when the Service
// carries svccontroller.k3s.cattle.io/lbpool=<pool>, only nodes with that lbpool label too
// (newDaemonSet, nodeHasDaemonSetLabel). What it publishes: status.loadBalancer.ingress lists
// the nodes running a ready svclb pod, by ExternalIP when any of them has one, else by
// InternalIP (podIPs). kube-proxy then programs those addresses as the Service's
// "loadbalancer IP" rules (kubernetes v1.37.2 pkg/proxy/iptables/proxier.go).
const (
	enableLBLabel = "svccontroller.k3s.cattle.io/enablelb"
	lbPoolLabel   = "svccontroller.k3s.cattle.io/lbpool"
	// LBPool is the pool the plan puts the address nodes and the new Services in.
	LBPool = "lanaccess"
	// LBSuffix ends the names of the new LoadBalancer Services.
	LBSuffix = "-lb"
)

// serviceLBPlan gives the proxy and the DNS a LoadBalancer Service each, served by ServiceLB
// on the nodes that carry the addresses; the Deployments stay as they are.
func serviceLBPlan(s *kube.Setup, p *Plan) error {
	if err := k3sWithServiceLB(s, p.Addresses); err != nil {
		return err
	}
	nodes := nodeNames(p.Addresses)
	var labelled, others []string
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if _, ok := n.Labels[enableLBLabel]; ok {
			labelled = append(labelled, n.Name)
		}
		if !containsName(nodes, n.Name) {
			others = append(others, n.Name)
		}
	}
	if len(labelled) == 0 && len(others) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("No node carries %s today: once the address nodes do, ServiceLB places the pods of every "+
			"LoadBalancer Service of the cluster on nodes labelled %s=true only, so %s would serve none (label them too if other Services need them).",
			enableLBLabel, enableLBLabel, strings.Join(others, ", ")))
	}
	proxy, dns := lbService(s.ProxyService), lbService(s.DNSService)
	if o, ok := kube.OwnerOf(s.ProxyService); ok && o.Tool == "Helm" && strings.HasPrefix(o.Chart, "traefik-") {
		p.Values = traefikLBValues(o, s.ProxyService)
		p.Notes = append(p.Notes, "The proxy's Service is the Helm release's: it becomes type LoadBalancer in place and keeps its externalIPs until the cut-over.")
	} else {
		p.Objects = append(p.Objects, proxy)
	}
	p.Objects = append(p.Objects, dns)
	label := make([]string, 0, len(nodes))
	for _, n := range nodes {
		label = append(label, remedy.Kubectl("", "label", "node", n, enableLBLabel+"=true", lbPoolLabel+"="+LBPool, "--overwrite"))
	}
	first := Step{
		Title: "Put the address nodes in ServiceLB's pool",
		Why: []string{"ServiceLB runs a LoadBalancer Service's pods on nodes labelled " + enableLBLabel + "=true and, for a Service labelled " +
			lbPoolLabel + "=" + LBPool + ", on nodes of that pool only (k3s pkg/cloudprovider/servicelb.go newDaemonSet)."},
		Commands: label,
	}
	p.Steps = lbSteps(p, s, []Step{first}, dns, "ServiceLB")
	return nil
}

// k3sWithServiceLB refuses a cluster where ServiceLB would not serve the addresses: nodes
// that are not k3s's (no k3s.io/node-args annotation, which k3s writes on every node it runs,
// pkg/nodeconfig), a server started with --disable servicelb, or an address node with an
// ExternalIP (ServiceLB would publish that instead of the LAN address).
func k3sWithServiceLB(s *kube.Setup, addrs []NodeAddress) error {
	for _, a := range addrs {
		n := nodeNamed(s, a.Node)
		if n == nil {
			return failf("node %s is not in the cluster's node list", a.Node)
		}
		raw, ok := n.Annotations["k3s.io/node-args"]
		if !ok {
			return failf("node %s is not a k3s node (no k3s.io/node-args annotation): ServiceLB is k3s's own load balancer", n.Name)
		}
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			return failf("node %s: annotation k3s.io/node-args does not parse (%v): cannot tell whether ServiceLB runs", n.Name, err)
		}
		for i, arg := range args {
			if arg == "--disable" && i+1 < len(args) && containsName(strings.Split(args[i+1], ","), "servicelb") {
				return failf("k3s on node %s runs with --disable servicelb: ServiceLB is off (use --to hostport)", n.Name)
			}
		}
		for _, na := range n.Status.Addresses {
			if na.Type == corev1.NodeExternalIP {
				return failf("node %s has ExternalIP %s: ServiceLB publishes the nodes' ExternalIPs when any has one, not %s (k3s pkg/cloudprovider/servicelb.go podIPs); use --to hostport", n.Name, na.Address, a.Addr)
			}
		}
	}
	return nil
}

func nodeNamed(s *kube.Setup, name string) *corev1.Node {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// lbService is old as a LoadBalancer Service of ServiceLB's pool: the same selector (the same
// pods) and ports, no externalIPs.
func lbService(old *corev1.Service) *corev1.Service {
	m := newMeta(old.ObjectMeta, old.Name+LBSuffix)
	delete(m.Labels, MigratedLabel)
	m.Labels[MigratedLabel] = string(ServiceLB)
	m.Labels[lbPoolLabel] = LBPool
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: m,
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			Selector:              maps.Clone(old.Spec.Selector),
			Ports:                 servicePorts(old.Spec.Ports),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}
}

// traefikLBValues turn the release's Service into ServiceLB's: traefik-helm-chart v41.3.0
// renders service.spec into the Service's spec and service.labels into its labels
// (templates/service.yaml, _service.tpl traefik.service-metadata / traefik.service-spec).
func traefikLBValues(o kube.Owner, svc *corev1.Service) *HelmValues {
	v := &HelmValues{
		Release: o.Name, Namespace: o.Namespace, Chart: o.Chart,
		Values: map[string]any{"service": map[string]any{
			"spec":   map[string]any{"type": "LoadBalancer"},
			"labels": map[string]any{lbPoolLabel: LBPool},
		}},
		ExternalIPsKey: kube.ValuesKey(o.Chart, "Service", "spec.externalIPs"),
		Verified:       chartMajor(o.Chart) == chartMajor(VerifiedTraefikChart),
	}
	if v.Namespace == "" {
		v.Namespace = svc.Namespace
	}
	return v
}

// lbSteps is the cut-over to LoadBalancer Services that an implementation (by) serves on the
// address nodes: first, the Helm upgrade or the new Services, the wait for the published
// addresses, doctor, the cut-over, doctor again, the rollback and the clean-up.
func lbSteps(p *Plan, s *kube.Setup, first []Step, dns *corev1.Service, by string) []Step {
	steps := first
	proxyRef := s.ProxyService.Namespace + "/" + s.ProxyService.Name + LBSuffix
	if p.Values != nil {
		values := remedy.YAML(p.Values.Values)
		upgrade := []string{"helm", "upgrade", p.Values.Release, "traefik/traefik", "-n", p.Values.Namespace, "--reuse-values", "-f", ValuesFile}
		if _, version := splitChartVersion(p.Values.Chart); version != "" {
			upgrade = append(upgrade, "--version", version)
		}
		why := []string{fmt.Sprintf("The proxy's Service belongs to the Helm release %s (chart %s): these values make it a LoadBalancer that %s serves.", p.Values.Release, p.Values.Chart, by)}
		if !p.Values.Verified {
			why = append(why, fmt.Sprintf("The keys were read from chart %s; compare them with your chart's values.yaml (%s) before upgrading.", VerifiedTraefikChart, p.Values.Chart))
		}
		steps = append(steps, Step{Title: "Make the proxy's Service a LoadBalancer", Why: why,
			Commands: []string{"cat > " + ValuesFile + " <<'EOF'\n" + values + "\nEOF", remedy.Command(upgrade...)}})
		proxyRef = s.ProxyService.Namespace + "/" + s.ProxyService.Name
	}
	refs := make([]string, 0, len(p.Objects))
	for _, o := range p.Objects {
		refs = append(refs, refOf(o))
	}
	steps = append(steps, Step{
		Title: "Apply the LoadBalancer Services beside the old ones",
		Why: []string{"New names (" + strings.Join(refs, ", ") + "), the same selectors: the same pods answer on either path. " +
			"While both exist, the node addresses' ports match the Service dataplane's rules (kube-proxy's or Cilium's) of the old externalIPs and of the new Services' " +
			"loadbalancer IPs, which lead to the same pods."},
		Commands: []string{remedy.Apply(p.Manifest())},
	})
	want := make([]string, len(p.Addresses))
	for i, a := range p.Addresses {
		want[i] = a.Addr.String()
	}
	sort.Strings(want)
	steps = append(steps, Step{
		Title: "Wait until " + by + " publishes the node addresses",
		Why:   []string{"Each Service's status.loadBalancer.ingress must list " + strings.Join(want, ", ") + ", the address nodes'."},
		Commands: []string{
			remedy.Kubectl(s.ProxyService.Namespace, "get", "service", strings.TrimPrefix(proxyRef, s.ProxyService.Namespace+"/"), "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}"),
			remedy.Kubectl(dns.Namespace, "get", "service", dns.Name, "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}"),
		},
	})
	doctor := p.doctorCommand(proxyRef, dns.Namespace+"/"+dns.Name)
	steps = append(steps, Step{Title: "Judge the new Services beside the old ones", Why: []string{"doctor reads the LoadBalancer Services and what " + by + " published."}, Commands: []string{doctor}})
	oldProxy := &part{oldService: s.ProxyService}
	oldDNS := &part{oldService: s.DNSService}
	steps = append(steps, cutOver(p, oldProxy, oldDNS))
	steps = append(steps, Step{Title: "Judge the new path alone", Why: []string{"Only the LoadBalancer Services claim the node addresses now."}, Commands: []string{doctor}})
	steps = append(steps, rollBack(p, oldProxy, oldDNS))
	cleanup := []string{}
	if p.Values == nil {
		cleanup = append(cleanup, remedy.Kubectl(s.ProxyService.Namespace, "delete", "service/"+s.ProxyService.Name))
	}
	cleanup = append(cleanup, remedy.Kubectl(s.DNSService.Namespace, "delete", "service/"+s.DNSService.Name))
	steps = append(steps, Step{
		Title:    "After doctor passes: delete the old Services",
		Why:      []string{"The Deployments stay: the new Services select their pods. Keep an old Service if something in the cluster still calls it by name."},
		Commands: cleanup,
	})
	return steps
}
