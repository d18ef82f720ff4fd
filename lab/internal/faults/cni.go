package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
)

// A CNI's DaemonSet (manifests/cni/<name>.yaml) makes the nodes readable for vpn-trace: its
// hostNetwork pods mount /etc/cni/net.d, and their install step writes the node's CNI
// configuration, which the lab's new pods then get (lab/internal/cniinstall).

// InstallCNI empties the nodes' CNI directories (a node provisioned with that CNI), applies the
// CNI's manifest and waits until its pods have installed on every node.
func (f Lab) InstallCNI(ctx context.Context, cfg *rest.Config, labDir, name string) error {
	for _, n := range f.Layout.Nodes {
		if err := os.RemoveAll(f.Layout.NodeCNIDir(n.NS)); err != nil {
			return err
		}
	}
	objs, err := labctl.DecodeFile(labctl.CNIManifest(labDir, name))
	if err != nil {
		return err
	}
	ds, _, err := cniDaemonSet(objs)
	if err != nil {
		return err
	}
	a, err := labctl.NewApplier(cfg)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := a.Apply(ctx, o); err != nil {
			return err
		}
	}
	return f.WaitDaemonSet(ctx, ds.GetNamespace(), ds.GetName())
}

// cniDaemonSet is the one DaemonSet of a CNI's manifest (calico.yaml's kube-system/calico-node,
// kube-flannel.yml's kube-flannel-ds: names vpn-trace trusts as node readers) and the selector
// of its pods.
func cniDaemonSet(objs []*unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "DaemonSet" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		return nil, "", fmt.Errorf("a CNI manifest has one DaemonSet, this one %d", len(found))
	}
	match, _, err := unstructured.NestedStringMap(found[0].Object, "spec", "selector", "matchLabels")
	if err != nil || len(match) == 0 {
		return nil, "", errors.Join(err, fmt.Errorf("daemonset %s/%s: no spec.selector.matchLabels", found[0].GetNamespace(), found[0].GetName()))
	}
	return found[0], labels.SelectorFromSet(match).String(), nil
}

// UninstallCNI deletes what InstallCNI applied, waits until its pods are gone and gives the
// nodes back the lab's own CNI configuration (labctl.WriteNodeCNIConfigs). Pods started in
// between keep what they got.
func (f Lab) UninstallCNI(ctx context.Context, labDir, name string) error {
	objs, err := labctl.DecodeFile(labctl.CNIManifest(labDir, name))
	if err != nil {
		return err
	}
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case "DaemonSet":
			err = f.Client.AppsV1().DaemonSets(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		case "ConfigMap":
			err = f.Client.CoreV1().ConfigMaps(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		default:
			err = fmt.Errorf("%s %s: a kind the CNI manifests do not use", o.GetKind(), o.GetName())
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	ds, selector, err := cniDaemonSet(objs)
	if err != nil {
		return err
	}
	err = poll(ctx, 60*time.Second, func() error {
		pods, err := f.Client.CoreV1().Pods(ds.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods of the CNI DaemonSet left", len(pods.Items))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return labctl.WriteNodeCNIConfigs(f.Layout, labDir)
}

// WaitDaemonSet waits until a DaemonSet's pods are all of its current template and ready.
func (f Lab) WaitDaemonSet(ctx context.Context, namespace, name string) error {
	return poll(ctx, 90*time.Second, func() error {
		ds, err := f.Client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := ds.Status
		if s.ObservedGeneration < ds.Generation || s.DesiredNumberScheduled == 0 || s.UpdatedNumberScheduled != s.DesiredNumberScheduled ||
			s.NumberReady != s.DesiredNumberScheduled || s.NumberAvailable != s.DesiredNumberScheduled || s.CurrentNumberScheduled != s.DesiredNumberScheduled {
			return fmt.Errorf("daemonset %s/%s rolling out: %d desired, %d updated, %d ready", namespace, name,
				s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady)
		}
		return nil
	})
}
