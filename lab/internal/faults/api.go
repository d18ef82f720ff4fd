package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
)

// SyncTimeout bounds how long a fault waits for the daemon to act on an API change. A rollout
// starts its pods one after another (CoreDNS with ClusterFirst takes ~5 s to listen here), and
// one CI run on a busy 2-core machine needed more than 30 s to undo SetDNSPolicy.
const SyncTimeout = 60 * time.Second

// WaitSynced waits until the daemon's loop (daemon.SyncRuntime or SyncProxy) has acted on
// resource at resourceVersion rv or later.
func (f Lab) WaitSynced(ctx context.Context, loop, resource, rv string) error {
	want, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("resourceVersion %q: %w", rv, err)
	}
	return poll(ctx, SyncTimeout, func() error {
		seen, err := daemon.ReadSynced(f.Layout, loop)
		if err != nil {
			return err
		}
		if seen[resource] < want {
			return fmt.Errorf("lab daemon has not acted on %s version %d yet (at %d)", resource, want, seen[resource])
		}
		return nil
	})
}

// EditConfigMap rewrites one key of a ConfigMap and waits until the lab's pod runtime wrote
// the new content into the pods that mount it. It returns the previous value.
func (f Lab) EditConfigMap(ctx context.Context, namespace, name, key string, edit func(string) string) (string, error) {
	cm, err := f.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("configmap %s/%s: %w", namespace, name, err)
	}
	prev, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("configmap %s/%s has no key %q", namespace, name, key)
	}
	return prev, f.SetConfigMapKey(ctx, namespace, name, key, edit(prev))
}

// SetConfigMapKey writes one key of a ConfigMap and waits for the pod runtime.
func (f Lab) SetConfigMapKey(ctx context.Context, namespace, name, key, value string) error {
	cm, err := f.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", namespace, name, err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[key] = value
	cm, err = f.Client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update configmap %s/%s: %w", namespace, name, err)
	}
	return f.WaitSynced(ctx, daemon.SyncRuntime, "configmaps", cm.ResourceVersion)
}

// CertKind names a certificate the proxy can be made to serve.
type CertKind string

const (
	CertGood      CertKind = "good"       // *.apps.example.com from the lab CA
	CertWrongHost CertKind = "wrong-host" // valid chain, names wrong.example.net
	CertExpired   CertKind = "expired"    // right name, expired yesterday
	CertUnknownCA CertKind = "unknown-ca" // right name, self-signed
)

func (k CertKind) pair() (string, error) {
	switch k {
	case CertGood:
		return pki.AppsWildcard, nil
	case CertWrongHost:
		return pki.WrongHost, nil
	case CertExpired:
		return pki.Expired, nil
	case CertUnknownCA:
		return pki.UnknownCA, nil
	}
	return "", fmt.Errorf("certificate kind %q: want good, wrong-host, expired or unknown-ca", k)
}

// ServeCertificate puts a certificate in the apps TLS Secret (what a bad renewal does) and
// waits until the proxy reloaded it.
func (f Lab) ServeCertificate(ctx context.Context, kind CertKind) error {
	name, err := kind.pair()
	if err != nil {
		return err
	}
	pair, err := pki.Load(f.Layout.Path("pki"), name)
	if err != nil {
		return err
	}
	secrets := f.Client.CoreV1().Secrets(labctl.AppsTLSSecretNamespace)
	s, err := secrets.Get(ctx, labctl.AppsTLSSecretName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", labctl.AppsTLSSecretNamespace, labctl.AppsTLSSecretName, err)
	}
	s.Data = map[string][]byte{corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM}
	s, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update secret %s/%s: %w", labctl.AppsTLSSecretNamespace, labctl.AppsTLSSecretName, err)
	}
	return f.WaitSynced(ctx, daemon.SyncRuntime, "secrets", s.ResourceVersion)
}

// SetDNSPolicy changes a Deployment's pod dnsPolicy (ClusterFirst makes CoreDNS's
// `forward . /etc/resolv.conf` reach the cluster DNS) and waits for the rollout. It returns
// the previous policy.
func (f Lab) SetDNSPolicy(ctx context.Context, namespace, name string, policy corev1.DNSPolicy) (corev1.DNSPolicy, error) {
	deps := f.Client.AppsV1().Deployments(namespace)
	d, err := deps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("deployment %s/%s: %w", namespace, name, err)
	}
	prev := d.Spec.Template.Spec.DNSPolicy
	d.Spec.Template.Spec.DNSPolicy = policy
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return prev, fmt.Errorf("update deployment %s/%s: %w", namespace, name, err)
	}
	return prev, f.WaitRollout(ctx, namespace, name)
}

// WaitRollout waits until a Deployment's new pods are all available (in the lab: their
// processes listen), the pod runtime has acted on them and kube-proxy points at them.
func (f Lab) WaitRollout(ctx context.Context, namespace, name string) error {
	var last *appsv1.Deployment
	err := poll(ctx, 90*time.Second, func() error {
		d, err := f.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = d
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas != want {
			return fmt.Errorf("deployment %s/%s rolling out: %d updated, %d available, %d total, want %d",
				namespace, name, s.UpdatedReplicas, s.AvailableReplicas, s.Replicas, want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(last.Spec.Selector)
	if err != nil {
		return err
	}
	if err := f.waitPodsSynced(ctx, namespace, sel); err != nil {
		return err
	}
	// Available pods listen (the lab makes pods Ready only then); the Services must also
	// point at them.
	return f.WaitProxySynced(ctx)
}

// waitPodsSynced waits until the pod runtime acted on the current pods of a selector.
func (f Lab) waitPodsSynced(ctx context.Context, namespace string, sel labels.Selector) error {
	pods, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	var objs []metav1.Object
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	return f.WaitSynced(ctx, daemon.SyncRuntime, "pods", maxResourceVersion(objs))
}

// maxResourceVersion is the newest version among objects: the daemon's record reaches it
// once its cache holds all of them (a list's own version can be newer than any item).
func maxResourceVersion(objs []metav1.Object) string {
	var max uint64
	for _, o := range objs {
		if v, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64); err == nil && v > max {
			max = v
		}
	}
	return strconv.FormatUint(max, 10)
}

// WaitProxySynced waits until every node's kube-proxy has synced what was queued, once the
// changes made before the call have had time to reach it (kubeproxy.Synced: the sync metrics
// of the real kube-proxy, read on each node's loopback).
func (f Lab) WaitProxySynced(ctx context.Context) error {
	return f.waitKubeProxies(ctx, time.Now())
}

// waitKubeProxies waits until every node's kube-proxy synced what it had queued, for changes
// made before since.
func (f Lab) waitKubeProxies(ctx context.Context, since time.Time) error {
	for _, n := range f.Layout.Nodes {
		err := poll(ctx, SyncTimeout, func() error {
			s, err := kubeproxy.ReadSync(ctx, n.NS)
			if err != nil {
				return err
			}
			return kubeproxy.Synced(s, since, time.Now())
		})
		if err != nil {
			return fmt.Errorf("kube-proxy on %s: %w", n.NS, err)
		}
	}
	return nil
}

// DeletePods deletes the pods of a selector (what a node drain or `kubectl rollout restart`
// does to their namespaces: the replacements start from a fresh one) and waits until the
// Deployment named owner is available again.
func (f Lab) DeletePods(ctx context.Context, namespace, selector, owner string) error {
	pods := f.Client.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	for _, p := range list.Items {
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod %s/%s: %w", namespace, p.Name, err)
		}
	}
	old := map[string]bool{}
	for _, p := range list.Items {
		old[string(p.UID)] = true
	}
	err = poll(ctx, 60*time.Second, func() error {
		cur, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		for _, p := range cur.Items {
			if old[string(p.UID)] {
				return fmt.Errorf("pod %s/%s still present", namespace, p.Name)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return f.WaitRollout(ctx, namespace, owner)
}
