package podruntime

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	"github.com/containernetworking/cni/libcni"
)

// The CNI step of a pod with a network namespace of its own (node-vpn's) is the real one: the
// runtime loads the first configuration of the node's CNI directory, as containerd and CRI-O do
// (libcni's ConfFiles with *.conf, *.conflist, *.json, sorted by name, the first taken), and
// runs its chain through libcni with the reference plugins lab/build.sh builds
// (containernetworking/plugins: ptp, host-local, loopback, portmap, tuning). So a tuning
// plugin's "sysctl" map is written into the pod's namespace by tuning itself, with its own
// rules (net.* only, "." or "/" as separator, IFNAME substituted, duplicate keys refused).
//
// Two plugins cannot run here and are stand-ins, played at their place in the chain:
//
//   - calico needs calico-node and its datastore. It is replaced by the lab's wiring (ptp with
//     host-local, below) followed by the real tuning plugin writing what Calico's plugin writes
//     into a new pod's namespace: net.ipv4.ip_forward, 1 when container_settings.
//     allow_ip_forwarding is true and 0 otherwise (projectcalico/calico
//     cni-plugin/pkg/dataplane/linux/dataplane_linux.go, configureContainerSysctls). Calico's
//     other container settings, its IPAM, its policy and its routes are not played.
//   - flannel needs flanneld's subnet file and delegates to the bridge plugin, which writes
//     nothing into the pod's namespace (only the node's ip_forward). It is replaced by the
//     wiring alone.
//
// The wiring is ptp (a veth pair: eth0 in the pod with its address, a /32 route on the node's
// end, which carries the gateway address and so answers the pod's ARP) with host-local on the
// node's pod CIDR. kwok, not the CNI, hands out pod IPs (from the CIDR's first address up), so
// the runtime asks host-local for the pod's status.podIP (the "ips" capability) and the gateway
// is the CIDR's last host address, which kwok would hand out last.

// cniExtensions are the configuration files libcni lists, as containerd and CRI-O load them.
var cniExtensions = []string{".conf", ".conflist", ".json"}

// CNIConfigFile is the configuration file the runtime loads from dir ("" when there is none).
func CNIConfigFile(dir string) (string, error) {
	files, err := libcni.ConfFiles(dir, cniExtensions)
	if err != nil || len(files) == 0 {
		return "", err
	}
	sort.Strings(files)
	return files[0], nil
}

// podWiring is what the lab's wiring needs of a node.
type podWiring struct {
	// Subnet is the node's pod CIDR.
	Subnet string
	// DataDir is host-local's directory of leases (under the lab's state).
	DataDir string
}

// gateway is the last host address of the subnet.
func (w podWiring) gateway() (string, error) {
	p, err := netip.ParsePrefix(w.Subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return "", fmt.Errorf("pod CIDR %q: an IPv4 prefix of /30 or wider is needed", w.Subnet)
	}
	a := p.Masked().Addr().As4()
	binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])+uint32(1)<<(32-p.Bits())-2)
	return netip.AddrFrom4(a).String(), nil
}

// ptp is the wiring's plugin: ptp with host-local on the node's pod CIDR.
func (w podWiring) ptp() (map[string]any, error) {
	gw, err := w.gateway()
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"type":         "ptp",
		"capabilities": map[string]any{"ips": true},
		"ipam": map[string]any{
			"type":    "host-local",
			"dataDir": w.DataDir,
			"ranges":  []any{[]any{map[string]any{"subnet": w.Subnet, "gateway": gw}}},
			"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
		},
	}, nil
}

// LabConflist is a node's configuration made of the real plugins only: the wiring, portmap,
// and tuning with sysctl (no tuning when sysctl is empty).
func LabConflist(name, subnet, dataDir string, sysctl map[string]string) ([]byte, error) {
	ptp, err := podWiring{Subnet: subnet, DataDir: dataDir}.ptp()
	if err != nil {
		return nil, err
	}
	plugins := []any{ptp, map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}}}
	if len(sysctl) > 0 {
		plugins = append(plugins, map[string]any{"type": "tuning", "sysctl": sysctl})
	}
	return json.MarshalIndent(map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": plugins}, "", "  ")
}

// standIns replaces the plugins of a configuration (libcni's list bytes) that cannot run here
// by what they are played with, and says which it replaced ("" changed nothing).
func standIns(conf []byte, w podWiring) ([]byte, []string, error) {
	var list map[string]any
	if err := json.Unmarshal(conf, &list); err != nil {
		return nil, nil, fmt.Errorf("not a CNI configuration: %w", err)
	}
	plugins, _ := list["plugins"].([]any)
	var out []any
	var played []string
	for _, p := range plugins {
		m, _ := p.(map[string]any)
		switch m["type"] {
		case "calico":
			ptp, err := w.ptp()
			if err != nil {
				return nil, nil, err
			}
			v := "0"
			if cs, _ := m["container_settings"].(map[string]any); cs != nil && cs["allow_ip_forwarding"] == true {
				v = "1"
			}
			out = append(out, ptp, map[string]any{"type": "tuning", "sysctl": map[string]any{"net.ipv4.ip_forward": v}})
			played = append(played, "calico (ptp wiring, then tuning writes Calico's net.ipv4.ip_forward="+v+")")
		case "flannel":
			ptp, err := w.ptp()
			if err != nil {
				return nil, nil, err
			}
			out = append(out, ptp)
			played = append(played, "flannel (ptp wiring; flannel's bridge writes nothing in the pod)")
		default:
			out = append(out, p)
		}
	}
	if len(played) == 0 {
		return conf, nil, nil
	}
	list["plugins"] = out
	b, err := json.Marshal(list)
	return b, played, err
}

// nodeNetwork is the network a new pod on a node is set up with.
type nodeNetwork struct {
	// File is the node's configuration file it comes from.
	File string
	List *libcni.NetworkConfigList
	// StandIns names the plugins of File played by the lab (none: File runs as it is).
	StandIns []string
}

// loadNodeNetwork loads the node's first CNI configuration. A node without one cannot set a pod
// up (the runtime's "cni plugin not initialized"): the pod stays ContainerCreating.
func loadNodeNetwork(dir string, w podWiring) (nodeNetwork, error) {
	file, err := CNIConfigFile(dir)
	if err != nil {
		return nodeNetwork{}, err
	}
	if file == "" {
		return nodeNetwork{}, fmt.Errorf("no CNI configuration in %s", dir)
	}
	nw := nodeNetwork{File: file}
	if filepath.Ext(file) == ".conflist" {
		nw.List, err = libcni.NetworkConfFromFile(file)
	} else {
		nw.List, err = singlePluginList(file)
	}
	if err != nil {
		return nodeNetwork{}, fmt.Errorf("CNI configuration %s: %w", file, err)
	}
	conf, played, err := standIns(nw.List.Bytes, w)
	if err != nil {
		return nodeNetwork{}, fmt.Errorf("CNI configuration %s: %w", file, err)
	}
	if len(played) > 0 {
		if nw.List, err = libcni.NetworkConfFromBytes(conf); err != nil {
			return nodeNetwork{}, fmt.Errorf("CNI configuration %s as played: %w", file, err)
		}
		nw.StandIns = played
	}
	return nw, nil
}

// singlePluginList loads a *.conf or *.json file: one plugin, which the runtime runs as a list
// of one (libcni's ConfListFromConf, which libcni now deprecates, does the same).
func singlePluginList(file string) (*libcni.NetworkConfigList, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var plugin map[string]any
	if err := json.Unmarshal(b, &plugin); err != nil {
		return nil, err
	}
	list, err := json.Marshal(map[string]any{"cniVersion": plugin["cniVersion"], "name": plugin["name"], "plugins": []any{plugin}})
	if err != nil {
		return nil, err
	}
	return libcni.NetworkConfFromBytes(list)
}
