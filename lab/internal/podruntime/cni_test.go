package podruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

const calicoConflist = `{"name": "k8s-pod-network", "cniVersion": "1.0.0", "plugins": [
  {"type": "calico", "ipam": {"type": "calico-ipam"}%s},
  {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}]}`

var testWiring = podWiring{Subnet: "10.244.4.0/24", DataDir: "/state/nodes/node-vpn/cni/networks"}

// pluginTypes and tuningSysctls read a played configuration back.
func playedPlugins(t *testing.T, conf []byte) []map[string]any {
	t.Helper()
	var list struct {
		Plugins []map[string]any `json:"plugins"`
	}
	require.NoError(t, json.Unmarshal(conf, &list))
	return list.Plugins
}

func TestStandInsPlayOnlyWhatCannotRunHere(t *testing.T) {
	cases := []struct {
		name   string
		conf   string
		types  []string
		sysctl map[string]any // the tuning plugin's map the stand-in adds (nil: none)
		played int
	}{
		{"calico without container_settings: tuning writes Calico's 0", fmt.Sprintf(calicoConflist, ""),
			[]string{"ptp", "tuning", "portmap"}, map[string]any{"net.ipv4.ip_forward": "0"}, 1},
		{"calico with allow_ip_forwarding false: 0", fmt.Sprintf(calicoConflist, `, "container_settings": {"allow_ip_forwarding": false}`),
			[]string{"ptp", "tuning", "portmap"}, map[string]any{"net.ipv4.ip_forward": "0"}, 1},
		{"calico with allow_ip_forwarding: 1", fmt.Sprintf(calicoConflist, `, "container_settings": {"allow_ip_forwarding": true}`),
			[]string{"ptp", "tuning", "portmap"}, map[string]any{"net.ipv4.ip_forward": "1"}, 1},
		{"calico with allow_ip_forwarding as a string is not true: 0", fmt.Sprintf(calicoConflist, `, "container_settings": {"allow_ip_forwarding": "true"}`),
			[]string{"ptp", "tuning", "portmap"}, map[string]any{"net.ipv4.ip_forward": "0"}, 1},
		{"flannel: the wiring alone",
			`{"name": "cbr0", "cniVersion": "0.3.1", "plugins": [{"type": "flannel", "delegate": {"hairpinMode": true}}, {"type": "portmap", "capabilities": {"portMappings": true}}]}`,
			[]string{"ptp", "portmap"}, nil, 1},
		{"real plugins only: run as they are",
			`{"name": "n", "cniVersion": "1.0.0", "plugins": [{"type": "ptp"}, {"type": "tuning", "sysctl": {"net.ipv4.ip_forward": "1"}}]}`,
			[]string{"ptp", "tuning"}, nil, 0},
		{"a plugin the lab does not have stays: libcni refuses it as a runtime would",
			`{"name": "n", "cniVersion": "1.0.0", "plugins": [{"type": "cilium-cni"}]}`,
			[]string{"cilium-cni"}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, played, err := standIns([]byte(tc.conf), testWiring)
			require.NoError(t, err)
			assert.Len(t, played, tc.played)
			plugins := playedPlugins(t, got)
			var types []string
			for _, p := range plugins {
				types = append(types, p["type"].(string))
				if p["type"] == "tuning" && tc.sysctl != nil {
					assert.Equal(t, tc.sysctl, p["sysctl"])
				}
				if p["type"] == "ptp" && tc.played > 0 {
					assert.Equal(t, map[string]any{"ips": true}, p["capabilities"], "host-local is asked for the pod's IP")
					ipam := p["ipam"].(map[string]any)
					assert.Equal(t, "host-local", ipam["type"])
					assert.Equal(t, testWiring.DataDir, ipam["dataDir"])
					assert.Equal(t, []any{[]any{map[string]any{"subnet": "10.244.4.0/24", "gateway": "10.244.4.254"}}}, ipam["ranges"])
				}
			}
			assert.Equal(t, tc.types, types)
		})
	}
	_, _, err := standIns([]byte("not json"), testWiring)
	assert.Error(t, err)
}

func TestGatewayIsTheLastHostAddress(t *testing.T) {
	cases := []struct{ subnet, want, err string }{
		{"10.244.4.0/24", "10.244.4.254", ""},
		{"10.244.4.7/24", "10.244.4.254", ""},
		{"10.244.0.0/16", "10.244.255.254", ""},
		{"10.0.0.0/30", "10.0.0.2", ""},
		{"10.0.0.0/31", "", "/30 or wider"},
		{"fd00::/64", "", "IPv4"},
		{"nonsense", "", "IPv4"},
	}
	for _, tc := range cases {
		t.Run(tc.subnet, func(t *testing.T) {
			got, err := podWiring{Subnet: tc.subnet}.gateway()
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLabConflistChainsTheRealPlugins(t *testing.T) {
	cases := []struct {
		name   string
		sysctl map[string]string
		types  []string
	}{
		{"no sysctl: no tuning", nil, []string{"ptp", "portmap"}},
		{"tuning last, with its map", map[string]string{"net.ipv4.ip_forward": "1"}, []string{"ptp", "portmap", "tuning"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := LabConflist("lab", "10.244.4.0/24", "/d", tc.sysctl)
			require.NoError(t, err)
			var types []string
			for _, p := range playedPlugins(t, b) {
				types = append(types, p["type"].(string))
			}
			assert.Equal(t, tc.types, types)
		})
	}
	_, err := LabConflist("lab", "fd00::/64", "/d", nil)
	assert.Error(t, err)
}

func TestCNIConfigFileIsTheFirstThatLibcniLists(t *testing.T) {
	dir := t.TempDir()
	got, err := CNIConfigFile(filepath.Join(dir, "missing"))
	require.NoError(t, err)
	assert.Empty(t, got, "no directory: no configuration")
	for _, name := range []string{"calico-kubeconfig", "20-other.conf", "10-flannel.conflist", "notes.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600))
	}
	got, err = CNIConfigFile(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "10-flannel.conflist"), got)
}

func TestLoadNodeNetworkReadsTheFirstFileAndNamesWhatIsPlayed(t *testing.T) {
	cases := []struct {
		name, file, conf string
		standIns         int
		err              string
	}{
		{"calico conflist", "10-calico.conflist", fmt.Sprintf(calicoConflist, ""), 1, ""},
		{"a single-plugin .conf is wrapped in a list", "10-c.conf", `{"cniVersion": "0.3.1", "name": "c", "type": "calico"}`, 1, ""},
		{"a real conflist runs as it is", "05-lab.conflist", `{"cniVersion": "1.0.0", "name": "lab", "plugins": [{"type": "ptp"}]}`, 0, ""},
		{"a broken file keeps the pod waiting", "01-bad.conflist", `{"name": `, 0, "01-bad.conflist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.conf), 0o600))
			nw, err := loadNodeNetwork(dir, testWiring)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, tc.file), nw.File)
			assert.Len(t, nw.StandIns, tc.standIns)
			assert.NotEmpty(t, nw.List.Plugins)
		})
	}
	_, err := loadNodeNetwork(t.TempDir(), testWiring)
	assert.ErrorContains(t, err, "no CNI configuration")
}

func TestCheckResultWantsThePodIPAndTheNodesEnd(t *testing.T) {
	addr := func(s string) current.IPConfig {
		ip, n, _ := net.ParseCIDR(s)
		n.IP = ip
		return current.IPConfig{Address: *n}
	}
	cases := []struct {
		name string
		res  current.Result
		want string
		err  string
	}{
		{"ptp's result", current.Result{CNIVersion: "1.0.0",
			Interfaces: []*current.Interface{{Name: "veth1a2b3c4d"}, {Name: "eth0", Sandbox: "/run/netns/lab-pod-1"}},
			IPs:        []*current.IPConfig{new(addr("10.244.4.1/24"))}}, "veth1a2b3c4d", ""},
		{"another IP than the API's", current.Result{CNIVersion: "1.0.0",
			Interfaces: []*current.Interface{{Name: "veth1"}}, IPs: []*current.IPConfig{new(addr("10.244.4.9/24"))}}, "", "do not include the pod IP"},
		{"no node end", current.Result{CNIVersion: "1.0.0",
			Interfaces: []*current.Interface{{Name: "eth0", Sandbox: "/x"}}, IPs: []*current.IPConfig{new(addr("10.244.4.1/24"))}}, "", "no interface on the node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkResult(&tc.res, "10.244.4.1")
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPodCapabilitiesAskForThePodIPAndHostPorts(t *testing.T) {
	cases := []struct {
		name  string
		ports []corev1.ContainerPort
		want  map[string]any
	}{
		{"no hostPort", []corev1.ContainerPort{{ContainerPort: 1194, Protocol: corev1.ProtocolUDP}},
			map[string]any{"ips": []string{"10.244.4.1"}}},
		{"a hostPort, protocol defaulted", []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 80}},
			map[string]any{"ips": []string{"10.244.4.1"}, "portMappings": []map[string]any{{"hostPort": int32(80), "containerPort": int32(8080), "protocol": "tcp"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: tc.ports}}}, Status: corev1.PodStatus{PodIP: "10.244.4.1"}}
			assert.Equal(t, tc.want, podCapabilities(p))
		})
	}
}

func TestNodeExecRunsThePluginInTheNodesNamespaceAndKeepsItsError(t *testing.T) {
	assert.Equal(t, []string{"ip", "netns", "exec", "node-vpn", "/c/tuning"}, nodeExec{NS: "node-vpn"}.argv("/c/tuning"))
	cases := []struct {
		name           string
		stdout, stderr string
		want           string
	}{
		{"the plugin's error object", `{"code": 999, "msg": "invalid net sysctl key: \"kernel/foo\""}`, "", `invalid net sysctl key: "kernel/foo"`},
		{"nothing on stdout: stderr", "", "Cannot open network namespace", "Cannot open network namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := pluginErr(errors.New("exit status 1"), []byte(tc.stdout), []byte(tc.stderr))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
