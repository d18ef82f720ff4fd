package facts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// InstallationGVR is Calico operator's Installation (operator.tigera.io/v1, cluster-scoped).
var InstallationGVR = schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}

// The ConfigMaps that hold the CNI configuration Calico writes to the nodes: the operator
// renders calico-system/cni-config (tigera/operator pkg/render/node.go, nodeCNIConfigMap); a
// manifest install templates it in kube-system/calico-config (manifests/calico.yaml).
var calicoConfigMaps = []struct{ namespace, name, key string }{
	{"calico-system", "cni-config", "config"},
	{"kube-system", "calico-config", "cni_network_config"},
}

func (g *Gatherer) readCNI(ctx context.Context) CNI {
	var c CNI
	dss, err := g.seams.Client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		c.DaemonSetsErr = fmt.Errorf("listing DaemonSets: %w", err)
	} else {
		for _, ds := range dss.Items {
			if mountsCNIConf(ds) {
				c.DaemonSets = append(c.DaemonSets, CNIDaemonSet{Namespace: ds.Namespace, Name: ds.Name, Plugin: pluginOf(ds)})
			}
		}
	}
	if c.DaemonSetsErr != nil || c.Plugin() == "calico" {
		c.Calico = g.readCalico(ctx)
	}
	return c
}

// mountsCNIConf reports whether the DaemonSet's pods mount the node's CNI configuration
// directory: what a CNI's installer does.
func mountsCNIConf(ds appsv1.DaemonSet) bool {
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && strings.TrimRight(v.HostPath.Path, "/") == cniConfDir {
			return true
		}
	}
	return false
}

// pluginOf recognises the CNI by the DaemonSet's name or images.
func pluginOf(ds appsv1.DaemonSet) string {
	spec := ds.Spec.Template.Spec
	words := make([]string, 0, 1+len(spec.InitContainers)+len(spec.Containers))
	words = append(words, strings.ToLower(ds.Name))
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			words = append(words, strings.ToLower(c.Image))
		}
	}
	text := strings.Join(words, " ")
	switch {
	case strings.Contains(text, "calico-node") || strings.Contains(text, "calico/node") || strings.Contains(text, "calico/cni"):
		return "calico"
	case strings.Contains(text, "cilium"):
		return "cilium"
	case strings.Contains(text, "flannel"):
		return "flannel"
	}
	return ""
}

// readCalico reads the operator's Installation and the ConfigMap the nodes' CNI configuration
// comes from.
func (g *Gatherer) readCalico(ctx context.Context) CalicoSettings {
	var s CalicoSettings
	switch g.seams.Dynamic {
	case nil:
		s.InstallationErr = errors.New("no dynamic client: custom resources are not read")
	default:
		inst, err := g.seams.Dynamic.Resource(InstallationGVR).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			s.InstallationErr = fmt.Errorf("reading Installation default (operator.tigera.io): %w", err)
		default:
			s.Installation = true
			s.ContainerIPForwarding, _, _ = unstructured.NestedString(inst.Object, "spec", "calicoNetwork", "containerIPForwarding")
		}
	}
	var tried []string
	for _, cm := range calicoConfigMaps {
		obj, err := g.seams.Client.CoreV1().ConfigMaps(cm.namespace).Get(ctx, cm.name, metav1.GetOptions{})
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s/%s: %v", cm.namespace, cm.name, err))
			continue
		}
		text, ok := obj.Data[cm.key]
		if !ok {
			tried = append(tried, fmt.Sprintf("%s/%s has no key %s", cm.namespace, cm.name, cm.key))
			continue
		}
		s.ConfigMap, s.Key, s.Template = cm.namespace+"/"+cm.name, cm.key, text
		s.Config, s.ConfigErr = ParseCNITemplate(text)
		return s
	}
	s.ConfigErr = fmt.Errorf("no Calico CNI configuration ConfigMap (%s)", strings.Join(tried, "; "))
	return s
}
