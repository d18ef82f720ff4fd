//go:build lab

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real tuning plugin (containernetworking/plugins, lab/build.sh cni-plugins) run through
// libcni by the lab's runtime: node-vpn's first CNI configuration is made of the real plugins
// only (ptp with host-local, portmap, tuning), so nothing is played: the value the VPN pod's
// namespace gets is the one tuning wrote, and vpn-trace reads the same file through Calico's
// DaemonSet (which mounts the node's /etc/cni/net.d at /host/etc/cni/net.d) and judges it.
func TestTheRealTuningPluginWritesTheVPNPodsIPForwardAndVPNTraceJudgesIt(t *testing.T) {
	lab.InstallCNI(t, "calico") // node readers; its 10-calico.conflist sorts after 05-lab
	require.True(t, lab.IPForward(t, lab.VPNNode().Name), "node-vpn itself forwards")
	const file = "05-lab.conflist"
	cases := []struct {
		name, key, value string
	}{
		// The kernel's initial namespace may have 1 or 0 (a new namespace copies it): each value
		// is written once against it.
		{"tuning writes 0 (dotted key)", "net.ipv4.ip_forward", "0"},
		{"tuning writes 1 (slashed key)", "net/ipv4/ip_forward", "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lab.NodeCNIConflist(t, lab.VPNNode().Name, file, map[string]string{tc.key: tc.value})
			rolloutRestartVPN(t)
			conf, standIns := lab.VPNPodSandbox(t)
			assert.Equal(t, file, filepath.Base(conf), "the runtime loaded the node's first file")
			assert.Empty(t, standIns, "every plugin of it ran for real")
			assert.Equal(t, tc.value == "1", lab.VPNPodIPForward(t), "the pod's namespace has what tuning wrote")

			r := runLanaccess(t, "", vpnTraceTimeout, "vpn-trace", "-n", "vpn", "--only", "VPN001,VPN002,VPN003")
			status, _, fs := r.check(t, "VPN002")
			written := "the tuning plugin writes " + tc.value + " (sysctl in node node-vpn's /host/etc/cni/net.d/" + file + ")"
			if tc.value == "0" {
				assert.Equal(t, "fail", status, findingText(fs))
				origin := findingByCode(t, r, "VPN003", "VPN003-ORIGIN-CNI")
				assert.Contains(t, origin.Message, written)
				assert.Contains(t, origin.Message, "the tuning plugin has the last word")
				assert.NotContains(t, origin.Remediation, "calico", "Calico's setting would not change what tuning writes after it")
				return
			}
			assert.Equal(t, "pass", status, findingText(fs))
			byCNI := findingByCode(t, r, "VPN003", "VPN003-SET-BY-CNI")
			assert.Contains(t, byCNI.Message, written)
			_, _, fs = r.check(t, "VPN003")
			for _, f := range fs {
				assert.False(t, strings.HasPrefix(f.Code, "VPN003-HAND-FIX"), f.Message)
			}
		})
	}
}
