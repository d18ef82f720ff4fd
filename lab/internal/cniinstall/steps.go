package cniinstall

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// step is an init container the lab knows how to play; run returns the file it wrote.
type step interface {
	run(c *container) (string, error)
}

// stepOf recognises an init container ("" = not a CNI install step).
func stepOf(c corev1.Container) step {
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return nil
	}
	switch filepath.Base(argv[0]) {
	case "install":
		if strings.Contains(c.Image, "calico/cni") {
			return calicoInstall{}
		}
	case "cp":
		var operands []string
		for _, a := range argv[1:] {
			if a != "-f" {
				operands = append(operands, a)
			}
		}
		if len(operands) == 2 && !strings.HasPrefix(operands[0], "-") {
			return copyStep{src: operands[0], dst: operands[1]}
		}
	}
	return nil
}

// calicoInstall is Calico's install-cni writing the CNI configuration.
type calicoInstall struct{}

// calicoHostNetDir is where install-cni writes: the node's /etc/cni/net.d, mounted there.
const calicoHostNetDir = "/host/etc/cni/net.d"

func (calicoInstall) run(c *container) (string, error) {
	tmpl, ok, err := c.env("CNI_NETWORK_CONFIG")
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("CNI_NETWORK_CONFIG is not set (the lab plays install-cni's template from that variable only)")
	}
	name := c.envOr("CNI_CONF_NAME", "10-calico.conflist")
	netDir := c.envOr("CNI_NET_DIR", "/etc/cni/net.d")
	conf, err := RenderCalico(tmpl, c.envOr("KUBERNETES_NODE_NAME", c.pod.Spec.NodeName), c.envOr("CNI_MTU", "1500"), netDir+"/calico-kubeconfig")
	if err != nil {
		return "", err
	}
	dest, err := c.hostPath(calicoHostNetDir + "/" + name)
	if err != nil {
		return "", err
	}
	return dest, writeFile(dest, []byte(conf))
}

// placeholder is an install-time value of Calico's template.
var placeholder = regexp.MustCompile(`__[A-Z0-9_]+__`)

// RenderCalico is install-cni's rendering of calico.yaml's template for a node: the node's
// name, the MTU ("0": Calico detects it) and the kubeconfig it writes next to the file. A
// placeholder it does not play is an error, never left in the file.
func RenderCalico(tmpl, node, mtu, kubeconfig string) (string, error) {
	out := strings.NewReplacer("__KUBERNETES_NODE_NAME__", node, "__CNI_MTU__", mtu, "__KUBECONFIG_FILEPATH__", kubeconfig).Replace(tmpl)
	if left := placeholder.FindString(out); left != "" {
		return "", fmt.Errorf("the template's %s is not one the lab renders", left)
	}
	return out, nil
}

// copyStep is `cp [-f] SRC DST`: a file of a ConfigMap volume into the node's directory.
type copyStep struct{ src, dst string }

func (s copyStep) run(c *container) (string, error) {
	b, err := c.configMapFile(s.src)
	if err != nil {
		return "", err
	}
	dest, err := c.hostPath(s.dst)
	if err != nil {
		return "", err
	}
	return dest, writeFile(dest, b)
}

// container is an init container of a pod on a lab node.
type container struct {
	pod     *corev1.Pod
	spec    corev1.Container
	layout  layout.Layout
	sources podruntime.Sources
}

// env resolves an environment variable: a value, a ConfigMap key or the pod's node name.
func (c *container) env(name string) (string, bool, error) {
	for _, e := range c.spec.Env {
		if e.Name != name {
			continue
		}
		switch from := e.ValueFrom; {
		case from == nil:
			return e.Value, true, nil
		case from.ConfigMapKeyRef != nil:
			cm, err := c.sources.ConfigMap(c.pod.Namespace, from.ConfigMapKeyRef.Name)
			if err != nil {
				return "", false, fmt.Errorf("%s: configmap %s/%s: %w", name, c.pod.Namespace, from.ConfigMapKeyRef.Name, err)
			}
			v, ok := cm.Data[from.ConfigMapKeyRef.Key]
			if !ok {
				return "", false, fmt.Errorf("%s: configmap %s/%s has no key %s", name, c.pod.Namespace, from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key)
			}
			return v, true, nil
		case from.FieldRef != nil && from.FieldRef.FieldPath == "spec.nodeName":
			return c.pod.Spec.NodeName, true, nil
		default:
			return "", false, fmt.Errorf("%s: a source the lab does not play", name)
		}
	}
	return "", false, nil
}

func (c *container) envOr(name, def string) string {
	if v, ok, err := c.env(name); err == nil && ok && v != "" {
		return v
	}
	return def
}

// mount is the volume mount that holds a container path, and the path inside it.
func (c *container) mount(path string) (corev1.Volume, string, error) {
	path = filepath.Clean(path)
	best, rel := "", ""
	var vol string
	for _, m := range c.spec.VolumeMounts {
		mp := filepath.Clean(m.MountPath)
		if r, err := filepath.Rel(mp, path); err == nil && filepath.IsLocal(r) && len(mp) > len(best) {
			best, rel, vol = mp, r, m.Name
		}
	}
	for _, v := range c.pod.Spec.Volumes {
		if best != "" && v.Name == vol {
			return v, rel, nil
		}
	}
	return corev1.Volume{}, "", fmt.Errorf("%s is on no volume of init container %s", path, c.spec.Name)
}

// hostPath is where a container path on a hostPath volume is in the lab: only the directories
// each lab node has its own copy of (layout.NodeHostPath); the lab writes no machine directory.
func (c *container) hostPath(path string) (string, error) {
	v, rel, err := c.mount(path)
	if err != nil {
		return "", err
	}
	if v.HostPath == nil {
		return "", fmt.Errorf("%s is not on a hostPath volume", path)
	}
	dir, ok := c.layout.NodeHostPath(c.pod.Spec.NodeName, v.HostPath.Path)
	if !ok {
		return "", fmt.Errorf("hostPath %s: the lab keeps no per-node copy of it", v.HostPath.Path)
	}
	return filepath.Join(dir, rel), nil
}

// configMapFile is the content of a container path on a ConfigMap volume.
func (c *container) configMapFile(path string) ([]byte, error) {
	v, rel, err := c.mount(path)
	if err != nil {
		return nil, err
	}
	if v.ConfigMap == nil {
		return nil, fmt.Errorf("%s is not on a ConfigMap volume", path)
	}
	cm, err := c.sources.ConfigMap(c.pod.Namespace, v.ConfigMap.Name)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", c.pod.Namespace, v.ConfigMap.Name, err)
	}
	key := rel
	for _, it := range v.ConfigMap.Items {
		if filepath.Clean(it.Path) == rel {
			key = it.Key
		}
	}
	data, ok := cm.Data[key]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s has no key %s", c.pod.Namespace, v.ConfigMap.Name, key)
	}
	return []byte(data), nil
}

// writeFile writes a CNI configuration file, readable by all as on a node.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil { //nolint:gosec // a node's CNI configuration is world-readable
		return err
	}
	return os.Rename(tmp, path)
}
