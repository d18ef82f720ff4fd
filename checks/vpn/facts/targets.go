package facts

import (
	"context"
	"maps"
	"math"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (g *Gatherer) chooseTargets(ctx context.Context) (Targets, error) {
	var lt Targets
	pl, err := g.pods.get(ctx, g.findPods)
	if err != nil {
		return lt, err
	}
	domain := ""
	var resolvNS []netip.Addr
	if len(pl.running) > 0 {
		if tun, err := g.podTunnel(ctx, pl.running[0]); err == nil {
			domain = tun.Resolv.ClusterDomain()
			resolvNS = tun.Resolv.Nameservers
		}
	}
	if domain == "" {
		domain = "cluster.local"
		lt.Notes = append(lt.Notes, "cluster domain assumed cluster.local (the VPN pod's resolv.conf has no svc.* search entry)")
	}
	lt.Name = "kubernetes.default.svc." + domain

	dnsSvc := g.clusterDNSService(ctx)
	switch {
	case g.opts.ClusterDNS.IsValid():
		lt.VIP, lt.VIPDesc = g.opts.ClusterDNS, "--cluster-dns"
	case dnsSvc != nil:
		if a, err := netip.ParseAddr(dnsSvc.Spec.ClusterIP); err == nil {
			lt.VIP, lt.VIPDesc = a, "Service "+dnsSvc.Namespace+"/"+dnsSvc.Name
		}
	case len(resolvNS) > 0:
		lt.VIP, lt.VIPDesc = resolvNS[0], "the VPN pod's resolv.conf nameserver"
	}
	if !lt.VIP.IsValid() {
		lt.Notes = append(lt.Notes, "no cluster DNS Service found (name its address with --cluster-dns)")
	}

	switch {
	case g.opts.PodTarget.Addr().IsValid():
		lt.PodIP, lt.PodPort, lt.PodDesc = g.opts.PodTarget.Addr(), g.opts.PodTarget.Port(), "--pod-target"
	default:
		g.choosePodTarget(ctx, dnsSvc, pl, &lt)
	}
	lt.Public = g.opts.Public
	g.clusterRanges(ctx, &lt)
	return lt, nil
}

// clusterRanges reads the nodes' pod ranges and the ServiceCIDR objects' ranges.
func (g *Gatherer) clusterRanges(ctx context.Context, lt *Targets) {
	nodes, err := g.seams.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		lt.Notes = append(lt.Notes, "the nodes' pod ranges were not read: "+err.Error())
	} else {
		for _, n := range nodes.Items {
			cidrs := n.Spec.PodCIDRs
			if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
				cidrs = []string{n.Spec.PodCIDR}
			}
			lt.PodCIDRs = appendPrefixes(lt.PodCIDRs, cidrs)
		}
	}
	sc, err := g.seams.Client.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if err != nil {
		lt.Notes = append(lt.Notes, "the Service ranges were not read (ServiceCIDR objects): "+err.Error())
		return
	}
	for _, s := range sc.Items {
		lt.ServiceCIDRs = appendPrefixes(lt.ServiceCIDRs, s.Spec.CIDRs)
	}
}

// appendPrefixes adds the valid IPv4 prefixes of cidrs that are not there yet.
func appendPrefixes(to []netip.Prefix, cidrs []string) []netip.Prefix {
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || !p.Addr().Is4() || slices.Contains(to, p.Masked()) {
			continue
		}
		to = append(to, p.Masked())
	}
	return to
}

// clusterDNSService is kube-system/kube-dns, or any Service labelled k8s-app=kube-dns.
func (g *Gatherer) clusterDNSService(ctx context.Context) *corev1.Service {
	if s, err := g.seams.Client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil {
		return s
	}
	l, err := g.seams.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err == nil && len(l.Items) > 0 {
		return &l.Items[0]
	}
	return nil
}

// choosePodTarget prefers a ready cluster DNS endpoint (a DNS question is a real test), else
// any running pod of another workload with an IP of its own.
func (g *Gatherer) choosePodTarget(ctx context.Context, dnsSvc *corev1.Service, pl podList, lt *Targets) {
	if dnsSvc != nil && g.dnsEndpointTarget(ctx, dnsSvc, lt) {
		return
	}
	vpn := map[string]bool{}
	for _, p := range pl.running {
		vpn[p.ref.String()] = true
	}
	l, err := g.seams.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil {
		lt.Notes = append(lt.Notes, "no pod to aim at: "+err.Error()+" (name one with --pod-target)")
		return
	}
	for _, p := range l.Items {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning || vpn[p.Namespace+"/"+p.Name] {
			continue
		}
		lt.PodIP, lt.PodPort, lt.PodDesc = ip, firstTCPPort(p), "pod "+p.Namespace+"/"+p.Name
		lt.Pod, lt.PodNode = &p, p.Spec.NodeName
		lt.PodNamespaceLabels = g.labelsOfNamespace(ctx, p.Namespace)
		return
	}
	lt.Notes = append(lt.Notes, "no running pod with its own IP to aim at (name one with --pod-target)")
}

// dnsEndpointTarget aims the pod hop at a ready endpoint of the cluster DNS Service.
func (g *Gatherer) dnsEndpointTarget(ctx context.Context, dnsSvc *corev1.Service, lt *Targets) bool {
	eps, err := g.seams.Client.DiscoveryV1().EndpointSlices(dnsSvc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + dnsSvc.Name})
	if err != nil {
		return false
	}
	for _, s := range eps.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil {
					continue
				}
				lt.PodIP, lt.PodPort, lt.PodIsDNS = ip, 53, true
				lt.PodDesc = "cluster DNS endpoint of Service " + dnsSvc.Namespace + "/" + dnsSvc.Name
				if e.NodeName != nil {
					lt.PodNode = *e.NodeName
				}
				if e.TargetRef != nil {
					lt.PodDesc = "cluster DNS pod " + e.TargetRef.Namespace + "/" + e.TargetRef.Name
					g.targetPod(ctx, e.TargetRef.Namespace, e.TargetRef.Name, lt)
				}
				return true
			}
		}
	}
	return false
}

// firstTCPPort is the first TCP port a pod's containers declare (0: none).
func firstTCPPort(p corev1.Pod) uint16 {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) && cp.ContainerPort > 0 && cp.ContainerPort <= math.MaxUint16 {
				return uint16(cp.ContainerPort)
			}
		}
	}
	return 0
}

// targetPod reads the pod the ladder aims at, for the policies that select it.
func (g *Gatherer) targetPod(ctx context.Context, namespace, name string, lt *Targets) {
	p, err := g.seams.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		lt.Notes = append(lt.Notes, "the target pod "+namespace+"/"+name+" was not read: "+err.Error())
		return
	}
	lt.Pod = p
	if lt.PodNode == "" {
		lt.PodNode = p.Spec.NodeName
	}
	lt.PodNamespaceLabels = g.labelsOfNamespace(ctx, namespace)
}

// labelsOfNamespace are a namespace's labels with kubernetes.io/metadata.name, which the API
// server sets on every namespace (so it is known even when the namespace cannot be read).
func (g *Gatherer) labelsOfNamespace(ctx context.Context, name string) map[string]string {
	l := map[string]string{corev1.LabelMetadataName: name}
	if ns, err := g.seams.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
		maps.Copy(l, ns.Labels)
	}
	return l
}
