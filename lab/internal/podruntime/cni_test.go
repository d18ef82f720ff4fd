package podruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// calicoConflist is calico.yaml's cni_network_config as install-cni renders it for a node.
const calicoConflist = `{
  "name": "k8s-pod-network",
  "cniVersion": "1.0.0",
  "plugins": [
    {"type": "calico", "nodename": "node-vpn", "mtu": 0, "ipam": {"type": "calico-ipam"}%s},
    {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}
  ]
}`

func TestCNISysctlsPlaysWhatEachPluginWrites(t *testing.T) {
	cases := []struct {
		name string
		conf string
		want [][2]string
	}{
		{"calico without the setting writes 0", fmt.Sprintf(calicoConflist, ""), [][2]string{{"net.ipv4.ip_forward", "0"}}},
		{"calico with allow_ip_forwarding false writes 0", fmt.Sprintf(calicoConflist, `, "container_settings": {"allow_ip_forwarding": false}`),
			[][2]string{{"net.ipv4.ip_forward", "0"}}},
		{"calico with allow_ip_forwarding writes 1", fmt.Sprintf(calicoConflist, `, "container_settings": {"allow_ip_forwarding": true}`),
			[][2]string{{"net.ipv4.ip_forward", "1"}}},
		{"flannel writes nothing: the pod keeps what its namespace inherited",
			`{"name": "cbr0", "cniVersion": "0.3.1", "plugins": [{"type": "flannel", "delegate": {"hairpinMode": true, "isDefaultGateway": true}}, {"type": "portmap", "capabilities": {"portMappings": true}}]}`,
			nil},
		{"tuning writes its net sysctls, both spellings, in name order",
			`{"name": "n", "plugins": [{"type": "ptp"}, {"type": "tuning", "sysctl": {"net/ipv4/ip_forward": "1", "net.ipv4.conf.all.rp_filter": "0", "kernel.foo": "1"}}]}`,
			[][2]string{{"net.ipv4.conf.all.rp_filter", "0"}, {"net.ipv4.ip_forward", "1"}}},
		{"a single-plugin .conf", `{"cniVersion": "0.3.1", "name": "c", "type": "calico"}`, [][2]string{{"net.ipv4.ip_forward", "0"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CNISysctls([]byte(tc.conf))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := CNISysctls([]byte(`{"name": "empty"}`))
	assert.Error(t, err, "no plugin")
	_, err = CNISysctls([]byte(`not json`))
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
