package nodes

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// The table of LA202's judgements of the configuration is in la202_kube_proxy_mode_config_test.go;
// these tests cover what the nodes themselves show.

func runLA202(t *testing.T, f *la201Fixture) engine.Outcome {
	t.Helper()
	f.exec.On("", "cat /proc/net/tcp", kubetest.Reply{Stdout: "  sl  local_address\n"})
	f.env.Reader = &noderead.NodeNetReader{Shells: f.env.Shells, Limit: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := KubeProxyMode(f.env).Run(ctx)
	assert.Empty(t, catalogue.Undeclared("LA202", o.Findings))
	return o
}

func TestANodeHoldingItsPeersAddressesOnKubeIPVS0FailsWhateverTheConfigurationSays(t *testing.T) {
	// Recorded in a namespace shaped as node-1 in IPVS mode (pkg/kube/noderead/testdata/nodenet).
	ipvs, err := os.ReadFile("../../pkg/kube/noderead/testdata/nodenet/ipvs-node.iproute2.txt")
	require.NoError(t, err)
	clean := "@@lanaccess-ip-addr\n2: eth0    inet 10.0.10.12/24 scope global eth0\\\n@@lanaccess-links\neth0\nlo\n"
	f := newLA201Fixture(t)
	f.exec.On("kube-system/kube-proxy-node-1", "@@lanaccess-ip-addr", kubetest.Reply{Stdout: string(ipvs)}).
		On("kube-system/kube-proxy-node-2", "@@lanaccess-ip-addr", kubetest.Reply{Stdout: clean}).
		On("kube-system/kube-proxy-node-3", "@@lanaccess-ip-addr", kubetest.Reply{Stdout: strings.ReplaceAll(clean, "10.0.10.12", "10.0.10.13")}).
		On("", "@@lanaccess-link", kubetest.Reply{Stdout: ""})
	f.env.Setup.Dataplane.KubeProxy = []kube.ProxySource{{Object: "ConfigMap kube-system/kube-proxy", Kind: "configmap", ModeFrom: "ConfigMap kube-system/kube-proxy key config.conf, field mode"}}
	o := runLA202(t, f)
	st, _ := engine.StatusOf(o)
	require.Equal(t, engine.StatusFail, st, "%+v", o.Findings)
	var peer *engine.Finding
	for i := range o.Findings {
		if o.Findings[i].Code == "LA202-PEER-ADDRESS-LOCAL" {
			peer = &o.Findings[i]
		}
	}
	require.NotNil(t, peer, "%+v", o.Findings)
	assert.Equal(t, "Node node-1", peer.Object)
	assert.Contains(t, peer.Message, "10.0.10.12 (node-2)")
	assert.NotContains(t, peer.Message, "10.0.10.11", "node-1's own address is not a peer's")
	assert.Contains(t, peer.Remediation, "kube-proxy --cleanup")
}

func TestNodesWithoutKubeIPVS0AndIptablesModePass(t *testing.T) {
	f := newLA201Fixture(t)
	for i, node := range []string{"node-1", "node-2", "node-3"} {
		addr := []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}[i]
		f.exec.On("kube-system/kube-proxy-"+node, "@@lanaccess-ip-addr", kubetest.Reply{Stdout: "@@lanaccess-ip-addr\n2: eth0    inet " + addr + "/24 scope global eth0\\\n@@lanaccess-links\neth0\nlo\n"})
	}
	f.exec.On("", "@@lanaccess-link", kubetest.Reply{Stdout: ""})
	f.env.Setup.Dataplane.KubeProxy = []kube.ProxySource{{Object: "DaemonSet kube-system/kube-proxy", Kind: "daemonset", Mode: "iptables", ModeFrom: "the container's --proxy-mode=iptables"}}
	o := runLA202(t, f)
	st, _ := engine.StatusOf(o)
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	for _, x := range o.Findings {
		assert.NotEqual(t, "LA202-NODES-NOT-READ", x.Code, "the nodes were read: %s", x.Message)
	}
}

func TestAnUnreadCiliumConfigIsNeverAPass(t *testing.T) {
	unread := kube.Dataplane{
		Cilium: &kube.CiliumConfig{Object: "ConfigMap cilium/cilium-config", Agent: true},
		Unread: []string{"ConfigMap cilium/cilium-config could not be read (the cilium agent's DaemonSet runs in namespace cilium): forbidden; grant get and list on configmaps in namespace cilium"},
	}
	iptables := kube.ProxySource{Object: "DaemonSet kube-system/kube-proxy", Kind: "daemonset", Mode: kube.ModeIPTables, ModeFrom: "the container's --proxy-mode=iptables"}
	for name, kp := range map[string][]kube.ProxySource{"no kube-proxy": nil, "kube-proxy in iptables mode": {iptables}} {
		t.Run(name, func(t *testing.T) {
			dp := unread
			dp.KubeProxy = kp
			o := engine.Outcome{Findings: DataplaneFindings(dp, nil)}
			st, _ := engine.StatusOf(o)
			assert.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
			said := make([]string, 0, len(o.Findings))
			for _, f := range o.Findings {
				assert.NotEqual(t, "LA202-REPLACED", f.Code)
				said = append(said, f.Code+": "+f.Message)
			}
			assert.Contains(t, strings.Join(said, "\n"), "LA202-UNREAD: not read: ConfigMap cilium/cilium-config could not be read")
			assert.Contains(t, strings.Join(said, "\n"), "namespace cilium")
		})
	}
}
