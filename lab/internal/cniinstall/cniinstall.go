// Package cniinstall plays the init containers that install a CNI's configuration on the
// nodes, for the hostNetwork pods of a CNI's DaemonSet: when such a pod starts on a lab node,
// its init container writes the node's CNI configuration file into the node's
// /etc/cni/net.d (the lab's layout.NodeCNIDir), once per pod, as the real one does when the
// kubelet starts the pod. The pod runtime then applies that file to the node's new pods
// (podruntime/cni.go). Two init containers are known:
//
//   - Calico's install-cni (image calico/cni, command /opt/cni/bin/install): it renders
//     CNI_NETWORK_CONFIG (calico.yaml takes it from the ConfigMap calico-config) into
//     /host/etc/cni/net.d/$CNI_CONF_NAME, replacing __KUBERNETES_NODE_NAME__, __CNI_MTU__ and
//     __KUBECONFIG_FILEPATH__ (projectcalico/calico cni-plugin/pkg/install/install.go);
//   - `cp [-f] SRC DST` from a ConfigMap volume into the hostPath (kube-flannel.yml's
//     install-cni copies /etc/kube-flannel/cni-conf.json to /etc/cni/net.d/10-flannel.conflist).
//
// Once its init container has run the pod is marked started (podruntime.StartedAnnotation), so
// that it becomes Ready and a DaemonSet rollout moves on, as the kubelet would.
package cniinstall

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// Installer runs the CNI install steps of the pods bound to lab nodes.
type Installer struct {
	Layout  layout.Layout
	Pods    func() ([]*corev1.Pod, error)
	Sources podruntime.Sources
	Log     *log.Logger
	// MarkStarted sets podruntime.StartedAnnotation on a pod.
	MarkStarted func(ctx context.Context, pod *corev1.Pod) error
}

// Reconcile installs for every running pod that has not had its install step yet.
func (in *Installer) Reconcile(ctx context.Context) error {
	pods, err := in.Pods()
	if err != nil {
		return err
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var errs []error
	for _, p := range pods {
		if _, err := in.Layout.Node(p.Spec.NodeName); err != nil || !p.Spec.HostNetwork ||
			p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || !hasInstallStep(p) {
			continue
		}
		if err := in.install(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// install runs the pod's install steps once, then marks it started.
func (in *Installer) install(ctx context.Context, p *corev1.Pod) error {
	marker := in.Layout.Path("nodes", p.Spec.NodeName, "cni-installed", string(p.UID))
	if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
		for _, c := range p.Spec.InitContainers {
			st := stepOf(c)
			if st == nil {
				continue
			}
			path, err := st.run(in.env(p, c))
			if err != nil {
				return fmt.Errorf("init container %s: %w", c.Name, err)
			}
			in.Log.Printf("pod %s/%s: init container %s wrote %s on %s", p.Namespace, p.Name, c.Name, path, p.Spec.NodeName)
		}
		if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			return err
		}
	}
	if p.Annotations[podruntime.StartedAnnotation] == "true" || in.MarkStarted == nil {
		return nil
	}
	return in.MarkStarted(ctx, p)
}

// env is what an init container sees: its pod, its node's directories, its ConfigMaps.
func (in *Installer) env(p *corev1.Pod, c corev1.Container) *container {
	return &container{pod: p, spec: c, layout: in.Layout, sources: in.Sources}
}

// hasInstallStep reports whether one of the pod's init containers is a CNI install step.
func hasInstallStep(p *corev1.Pod) bool {
	for _, c := range p.Spec.InitContainers {
		if stepOf(c) != nil {
			return true
		}
	}
	return false
}
