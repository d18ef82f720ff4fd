package labctl

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/cniinstall"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// The lab's nodes are provisioned with Calico's CNI configuration: every node's
// /etc/cni/net.d (layout.NodeCNIDir) holds calico.yaml's 10-calico.conflist as install-cni
// renders it, so each new pod gets Calico's ip_forward=0 whatever this machine's own value
// (Calico's plugin cannot run here: the real tuning plugin makes its write, podruntime/cni.go). The DaemonSet that would have written it is not applied by
// `up` (manifests/cni: the tests apply it).

// CNIManifest is a CNI's manifest: manifests/cni/<name>.yaml.
func CNIManifest(labDir, name string) string {
	return filepath.Join(labDir, "manifests", "cni", name+".yaml")
}

// calicoConfFile is the name calico.yaml's install-cni writes (CNI_CONF_NAME).
const calicoConfFile = "10-calico.conflist"

// WriteNodeCNIConfigs makes every node's CNI directory hold Calico's configuration and nothing
// else, rendered from manifests/cni/calico.yaml's ConfigMap.
func WriteNodeCNIConfigs(l layout.Layout, labDir string) error {
	path := CNIManifest(labDir, "calico")
	objs, err := DecodeFile(path)
	if err != nil {
		return err
	}
	var tmpl, mtu string
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "calico-config" {
			data, _ := o.Object["data"].(map[string]any)
			tmpl, _ = data["cni_network_config"].(string)
			mtu, _ = data["veth_mtu"].(string)
		}
	}
	if tmpl == "" {
		return fmt.Errorf("%s: no ConfigMap calico-config with cni_network_config", path)
	}
	for _, n := range l.Nodes {
		conf, err := cniinstall.RenderCalico(tmpl, n.NS, mtu, "/etc/cni/net.d/calico-kubeconfig")
		if err != nil {
			return err
		}
		dir := l.NodeCNIDir(n.NS)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, calicoConfFile), []byte(conf), 0o644); err != nil { //nolint:gosec // a node's CNI configuration is world-readable
			return err
		}
	}
	return nil
}
