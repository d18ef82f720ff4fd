package podruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The CNI step of a new pod network namespace: what the plugins of the node's configuration
// write into it, as the real plugins do. Only what bears on the pod's sysctls is played:
//
//   - calico writes net.ipv4.ip_forward, 1 when container_settings.allow_ip_forwarding is true
//     and 0 otherwise (projectcalico/calico cni-plugin/pkg/dataplane/linux/dataplane_linux.go,
//     configureContainerSysctls);
//   - tuning writes every sysctl of its "sysctl" map into the pod's namespace
//     (containernetworking/plugins plugins/meta/tuning);
//   - the others (flannel and the bridge it delegates to, portmap, ptp...) write nothing in the
//     pod's namespace, which keeps what the kernel gave it when it was created.
//
// The configuration is the first file of the node's CNI directory that libcni lists
// (*.conf, *.conflist, *.json in name order; containerd and CRI-O load that one).

// cniPlugin is the part of a plugin's configuration the lab plays.
type cniPlugin struct {
	Type              string `json:"type"`
	ContainerSettings *struct {
		AllowIPForwarding bool `json:"allow_ip_forwarding"`
	} `json:"container_settings"`
	Sysctl map[string]string `json:"sysctl"`
}

// CNIConfigFile is the configuration file the runtime loads from dir ("" when there is none).
func CNIConfigFile(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".conf", ".conflist", ".json":
			if e.Type().IsRegular() {
				names = append(names, e.Name())
			}
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	sort.Strings(names)
	return filepath.Join(dir, names[0]), nil
}

// CNISysctls are the sysctl writes the chain of a CNI configuration makes in a new pod's
// namespace, in the order the plugins run.
func CNISysctls(conf []byte) ([][2]string, error) {
	var raw struct {
		Plugins []cniPlugin `json:"plugins"`
		cniPlugin
	}
	if err := json.Unmarshal(conf, &raw); err != nil {
		return nil, fmt.Errorf("not a CNI configuration: %w", err)
	}
	plugins := raw.Plugins
	if len(plugins) == 0 && raw.Type != "" {
		plugins = []cniPlugin{raw.cniPlugin}
	}
	if len(plugins) == 0 {
		return nil, errors.New("a CNI configuration without plugins")
	}
	var writes [][2]string
	for _, p := range plugins {
		switch p.Type {
		case "calico":
			v := "0"
			if p.ContainerSettings != nil && p.ContainerSettings.AllowIPForwarding {
				v = "1"
			}
			writes = append(writes, [2]string{"net.ipv4.ip_forward", v})
		case "tuning":
			keys := make([]string, 0, len(p.Sysctl))
			for k := range p.Sysctl {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				// tuning refuses anything outside /proc/sys/net; it accepts both spellings.
				if name := strings.ReplaceAll(k, "/", "."); strings.HasPrefix(name, "net.") {
					writes = append(writes, [2]string{name, p.Sysctl[k]})
				}
			}
		}
	}
	return writes, nil
}
