package labkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// HostPortShape is the shape of the hostPort form's DaemonSets (issue 26): Traefik and
// lan-dns as DaemonSets mapping hostPorts, the Services without externalIPs.
type HostPortShape struct {
	// ProxySkip and DNSSkip name a node the DaemonSet leaves out ("" = none).
	ProxySkip, DNSSkip string
	// ProxyPorts are the proxy's hostPorts (default 80 and 443: web 8000, websecure 8443).
	ProxyPorts []int32
	// DNSProtocols are the protocols lan-dns maps 53 for (default UDP and TCP, to 1053).
	DNSProtocols []corev1.Protocol
}

// hostPortForm names the objects of the form.
const (
	hostPortLabel = "lab.lanaccess.io/form"
	proxyDS       = "traefik-hostport"
	dnsDS         = "lan-dns-hostport"
)

type hostPortRole struct {
	ns, deployment, svc, ds string
}

var (
	proxyRoleLab = hostPortRole{"traefik", "traefik", "traefik", proxyDS}
	dnsRoleLab   = hostPortRole{"traefik", "lan-dns", "lan-dns", dnsDS}
)

// HostPortForm moves the lab to the hostPort form until cleanup: both Deployments scaled to 0,
// both Services without externalIPs, and DaemonSets of the same pod templates that map
// hostPorts, shaped by shape. The pods get network namespaces of their own set up by the node's
// real CNI chain (Calico's conflist: its portmap runs as it is; podruntime.OwnNamespace), so
// the node addresses reach them through the real portmap plugin. Reshape with
// SetHostPortShape. Cleanup restores the seed's Deployments and externalIPs.
func (l *Lab) HostPortForm(tb testing.TB, shape HostPortShape) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type saved struct {
		replicas int32
		ips      []string
	}
	before := map[string]saved{}
	for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
		scale, err := l.Client.AppsV1().Deployments(r.ns).GetScale(ctx, r.deployment, metav1.GetOptions{})
		must(tb, "read "+r.deployment, err)
		svc, err := l.Client.CoreV1().Services(r.ns).Get(ctx, r.svc, metav1.GetOptions{})
		must(tb, "read Service "+r.svc, err)
		before[r.deployment] = saved{scale.Spec.Replicas, svc.Spec.ExternalIPs}
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		errs := make([]error, 0, 8)
		for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
			errs = append(errs, l.deleteDS(ctx, r))
			errs = append(errs, l.setReplicas(ctx, r, before[r.deployment].replicas))
			errs = append(errs, l.patchExternalIPs(ctx, r, before[r.deployment].ips))
		}
		for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
			errs = append(errs, l.waitDeploymentReady(ctx, r))
		}
		if err := errors.Join(errs...); err != nil {
			tb.Errorf("restore after HostPortForm: %v", err)
		}
	})
	l.ClusterDNSInOwnNamespace(tb)
	for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
		must(tb, "scale "+r.deployment, l.setReplicas(ctx, r, 0))
		must(tb, "drop externalIPs of "+r.svc, l.patchExternalIPs(ctx, r, nil))
	}
	for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
		must(tb, "wait for the pods of "+r.deployment+" to go", l.waitNoReplicaSetPods(ctx, r))
	}
	l.SetHostPortShape(tb, shape)
}

// ClusterDNSInOwnNamespace moves the cluster DNS's pods into network namespaces of their own
// until cleanup: a pod sharing its node's namespace has its address local to the node, so a
// hostPort 53 there (portmap's DNAT on --dst-type LOCAL) would capture the cluster's own
// queries, which no real node does. See podruntime.OwnNetNSAnnotation.
func (l *Lab) ClusterDNSInOwnNamespace(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clusterDNS := hostPortRole{"kube-system", "coredns", "kube-dns", ""}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := errors.Join(l.annotateTemplate(ctx, clusterDNS, nil), l.waitDeploymentReady(ctx, clusterDNS)); err != nil {
			tb.Errorf("restore the cluster DNS: %v", err)
		}
	})
	must(tb, "cluster DNS in a namespace of its own", l.annotateTemplate(ctx, clusterDNS, ptrTrue))
	must(tb, "cluster DNS ready", l.waitDeploymentReady(ctx, clusterDNS))
}

// SetHostPortShape (re)creates the form's DaemonSets in shape and waits for their pods.
func (l *Lab) SetHostPortShape(tb testing.TB, shape HostPortShape) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if len(shape.ProxyPorts) == 0 {
		shape.ProxyPorts = []int32{80, 443}
	}
	if len(shape.DNSProtocols) == 0 {
		shape.DNSProtocols = []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP}
	}
	for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
		must(tb, "delete DaemonSet "+r.ds, l.deleteDS(ctx, r))
	}
	proxyPorts := map[string]int32{"web": 80, "websecure": 443}
	proxy := func(c *corev1.Container) {
		for i := range c.Ports {
			if hp := proxyPorts[c.Ports[i].Name]; slices.Contains(shape.ProxyPorts, hp) {
				c.Ports[i].HostPort = hp
			}
		}
	}
	dns := func(c *corev1.Container) {
		for i := range c.Ports {
			if slices.Contains(shape.DNSProtocols, c.Ports[i].Protocol) {
				c.Ports[i].HostPort = 53
			}
		}
	}
	must(tb, "create "+proxyDS, l.createDS(ctx, proxyRoleLab, shape.ProxySkip, proxy))
	must(tb, "create "+dnsDS, l.createDS(ctx, dnsRoleLab, shape.DNSSkip, dns))
	for _, r := range []hostPortRole{proxyRoleLab, dnsRoleLab} {
		must(tb, "wait for DaemonSet "+r.ds, l.waitDSReady(ctx, r))
	}
	l.WaitProxySynced(tb)
}

func (l *Lab) setReplicas(ctx context.Context, r hostPortRole, n int32) error {
	s, err := l.Client.AppsV1().Deployments(r.ns).GetScale(ctx, r.deployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Spec.Replicas = n
	_, err = l.Client.AppsV1().Deployments(r.ns).UpdateScale(ctx, r.deployment, s, metav1.UpdateOptions{})
	return err
}

func (l *Lab) patchExternalIPs(ctx context.Context, r hostPortRole, ips []string) error {
	patch := []byte(`{"spec":{"externalIPs":null}}`)
	if len(ips) > 0 {
		b := []byte(`{"spec":{"externalIPs":[`)
		for i, ip := range ips {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "%q", ip)
		}
		patch = append(b, []byte(`]}}`)...)
	}
	_, err := l.Client.CoreV1().Services(r.ns).Patch(ctx, r.svc, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (l *Lab) createDS(ctx context.Context, r hostPortRole, skip string, ports func(*corev1.Container)) error {
	dep, err := l.Client.AppsV1().Deployments(r.ns).Get(ctx, r.deployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	tmpl := *dep.Spec.Template.DeepCopy()
	tmpl.Labels[hostPortLabel] = r.ds
	// The Deployment's spreading (anti-affinity) is the DaemonSet's by construction.
	tmpl.Spec.Affinity = nil
	if skip != "" {
		tmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{skip}}}}}}}}
	}
	ports(&tmpl.Spec.Containers[0])
	sel := map[string]string{hostPortLabel: r.ds}
	maps.Copy(sel, dep.Spec.Selector.MatchLabels)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: r.ds, Labels: map[string]string{hostPortLabel: r.ds}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}
	_, err = l.Client.AppsV1().DaemonSets(r.ns).Create(ctx, ds, metav1.CreateOptions{})
	return err
}

func (l *Lab) deleteDS(ctx context.Context, r hostPortRole) error {
	err := l.Client.AppsV1().DaemonSets(r.ns).Delete(ctx, r.ds, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// Its pods first: the next shape's pods claim the same hostPorts.
	sel := labels.SelectorFromSet(map[string]string{hostPortLabel: r.ds}).String()
	_ = l.Client.CoreV1().Pods(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel})
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := l.Client.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(pods.Items) == 0, nil
	})
}

func (l *Lab) waitNoReplicaSetPods(ctx context.Context, r hostPortRole) error {
	dep, err := l.Client.AppsV1().Deployments(r.ns).Get(ctx, r.deployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sel := labels.SelectorFromSet(dep.Spec.Selector.MatchLabels).String()
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := l.Client.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			for _, o := range p.OwnerReferences {
				if o.Kind == "ReplicaSet" {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

func (l *Lab) waitDSReady(ctx context.Context, r hostPortRole) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		ds, err := l.Client.AppsV1().DaemonSets(r.ns).Get(ctx, r.ds, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st := ds.Status
		last = fmt.Sprintf("desired %d, ready %d, observed generation %d/%d", st.DesiredNumberScheduled, st.NumberReady, st.ObservedGeneration, ds.Generation)
		return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled > 0 && st.NumberReady == st.DesiredNumberScheduled, nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s not ready (%s): %w", r.ns, r.ds, last, err)
	}
	return nil
}

func (l *Lab) waitDeploymentReady(ctx context.Context, r hostPortRole) error {
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := l.Client.AppsV1().Deployments(r.ns).Get(ctx, r.deployment, metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil {
			return false, nil
		}
		return d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas, nil
	})
}

var ptrTrue = func() *string { s := "true"; return &s }()

// annotateTemplate sets (value non-nil) or removes the own-netns annotation of a Deployment's
// pod template, which rolls its pods.
func (l *Lab) annotateTemplate(ctx context.Context, r hostPortRole, value *string) error {
	v := "null"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%s}}}}}`, podruntime.OwnNetNSAnnotation, v)
	_, err := l.Client.AppsV1().Deployments(r.ns).Patch(ctx, r.deployment, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
