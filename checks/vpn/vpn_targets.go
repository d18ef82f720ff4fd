package vpn

import (
	"context"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ladderTargets are the addresses both ladders walk to, chosen once per run.
type ladderTargets struct {
	// PodIP is a pod of another workload; PodIsDNS when it is a cluster DNS pod (then asked a
	// DNS question), else PodPort is a TCP port it declares (0: none, ping it).
	PodIP    netip.Addr
	PodPort  uint16
	PodIsDNS bool
	PodDesc  string
	// VIP is the cluster DNS Service's ClusterIP.
	VIP     netip.Addr
	VIPDesc string
	// Name is asked of the VIP and of the resolvers: kubernetes.default.svc.<domain>.
	Name string
	// Public is host:port (port 443 when none was given); "" when --public was not set.
	Public string
	Notes  []string
}

func (t *vpnTrace) ladderTargets(ctx context.Context) (ladderTargets, error) {
	return t.targets.get(ctx, t.chooseTargets)
}

func (t *vpnTrace) chooseTargets(ctx context.Context) (ladderTargets, error) {
	var lt ladderTargets
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return lt, err
	}
	domain := ""
	var resolvNS []netip.Addr
	if len(pods.Running) > 0 {
		if tun, err := t.podTunnel(ctx, pods.Running[0]); err == nil {
			domain = tun.Resolv.ClusterDomain()
			resolvNS = tun.Resolv.Nameservers
		}
	}
	if domain == "" {
		domain = "cluster.local"
		lt.Notes = append(lt.Notes, "cluster domain assumed cluster.local (the VPN pod's resolv.conf has no svc.* search entry)")
	}
	lt.Name = "kubernetes.default.svc." + domain

	dnsSvc := t.clusterDNSService(ctx)
	switch {
	case t.env.Options.ClusterDNS.IsValid():
		lt.VIP, lt.VIPDesc = t.env.Options.ClusterDNS, "--cluster-dns"
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
	case t.env.Options.PodTarget.Addr().IsValid():
		lt.PodIP, lt.PodPort, lt.PodDesc = t.env.Options.PodTarget.Addr(), t.env.Options.PodTarget.Port(), "--pod-target"
	default:
		t.choosePodTarget(ctx, dnsSvc, pods, &lt)
	}
	lt.Public = t.env.Options.Public
	return lt, nil
}

// clusterDNSService is kube-system/kube-dns, or any Service labelled k8s-app=kube-dns.
func (t *vpnTrace) clusterDNSService(ctx context.Context) *corev1.Service {
	if s, err := t.env.Client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil {
		return s
	}
	l, err := t.env.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err == nil && len(l.Items) > 0 {
		return &l.Items[0]
	}
	return nil
}

// choosePodTarget prefers a ready cluster DNS endpoint (a DNS question is a real test), else
// any running pod of another workload with an IP of its own.
func (t *vpnTrace) choosePodTarget(ctx context.Context, dnsSvc *corev1.Service, pods vpnPods, lt *ladderTargets) {
	if dnsSvc != nil {
		slices, err := t.env.Client.DiscoveryV1().EndpointSlices(dnsSvc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + dnsSvc.Name})
		if err == nil {
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if e.Conditions.Ready != nil && !*e.Conditions.Ready {
						continue
					}
					for _, a := range e.Addresses {
						if ip, err := netip.ParseAddr(a); err == nil {
							lt.PodIP, lt.PodPort, lt.PodIsDNS = ip, 53, true
							lt.PodDesc = "cluster DNS endpoint of Service " + dnsSvc.Namespace + "/" + dnsSvc.Name
							if e.TargetRef != nil {
								lt.PodDesc = "cluster DNS pod " + e.TargetRef.Namespace + "/" + e.TargetRef.Name
							}
							return
						}
					}
				}
			}
		}
	}
	vpn := map[string]bool{}
	for _, p := range pods.Running {
		vpn[p.Ref.String()] = true
	}
	l, err := t.env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil {
		lt.Notes = append(lt.Notes, "no pod to aim at: "+err.Error()+" (name one with --pod-target)")
		return
	}
	for _, p := range l.Items {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning || vpn[p.Namespace+"/"+p.Name] {
			continue
		}
		port := uint16(0)
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP {
					port = uint16(cp.ContainerPort)
					break
				}
			}
			if port != 0 {
				break
			}
		}
		lt.PodIP, lt.PodPort, lt.PodDesc = ip, port, "pod "+p.Namespace+"/"+p.Name
		return
	}
	lt.Notes = append(lt.Notes, "no running pod with its own IP to aim at (name one with --pod-target)")
}
