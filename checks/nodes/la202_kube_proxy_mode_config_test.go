package nodes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/internal/roundtrip"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// LA202's judgements of the configuration, each printed fix applied to the fake API as kubectl
// would (internal/roundtrip) and the check run again.

// kubeProxyConfigMap is kubeadm's ConfigMap with mode as given ("" leaves it out).
func kubeProxyConfigMap(mode string) string {
	m := ""
	if mode != "" {
		m = "    mode: " + mode + "\n"
	}
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: kube-proxy, namespace: kube-system}
data:
  config.conf: |
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    clusterCIDR: 10.244.0.0/16
` + m
}

// kubeProxyFlagDaemonSet is a kube-proxy DaemonSet configured by flags alone.
const kubeProxyFlagDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-proxy, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: kube-proxy}}
  template:
    metadata: {labels: {k8s-app: kube-proxy}}
    spec:
      containers:
        - name: kube-proxy
          image: registry.k8s.io/kube-proxy:v1.37.2
          command: [kube-proxy]
          args: [--v=2, --proxy-mode, ipvs, --hostname-override=$(NODE_NAME)]
`

// deleted is a fixture that deletes the healthy fixture's object of that kind and name.
func deleted(apiVersion, kind, ns, name string) string {
	return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata: {name: " + name + ", namespace: " + ns +
		", annotations: {" + fixture.DeleteAnnotation + ": \"true\"}}\n"
}

var noKubeProxy = deleted("apps/v1", "DaemonSet", "kube-system", "kube-proxy") + "---\n" + deleted("v1", "ConfigMap", "kube-system", "kube-proxy")

const ciliumKPR = `apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {kube-proxy-replacement: "true", enable-node-port: "false"}
`

// calicoNodeBPF is calico.yaml's agent with the eBPF dataplane switched on in its environment
// (FELIX_BPFENABLED, which wins over FelixConfiguration: felix/config/config_params.go).
const calicoNodeBPF = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: calico-node, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: calico-node}}
  template:
    metadata: {labels: {k8s-app: calico-node}}
    spec:
      containers:
        - name: calico-node
          image: docker.io/calico/node:v3.30.0
          env:
            - {name: FELIX_BPFENABLED, value: "true"}
`

// calicoOperator is an operator-managed calico-node (no FELIX_BPFENABLED in its environment)
// with Installation default's linuxDataplane as given (tigera/operator api/v1
// installation_types.go CalicoNetworkSpec.LinuxDataplane).
func calicoOperator(dataplane string) string {
	return strings.Replace(calicoNodeBPF, "          env:\n            - {name: FELIX_BPFENABLED, value: \"true\"}\n", "", 1) + `---
apiVersion: operator.tigera.io/v1
kind: Installation
metadata: {name: default}
spec:
  calicoNetwork: {linuxDataplane: ` + dataplane + `}
`
}

const k3sIPVSNode = `apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1, kubernetes.io/os: linux}
  annotations:
    k3s.io/node-args: '["server","--kube-proxy-arg","proxy-mode=ipvs","--disable","servicelb"]'
status:
  addresses: [{type: InternalIP, address: 10.0.10.11}]
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {operatingSystem: linux}
`

// healthyFixtures is the seed's setup as the API returns it (testdata/fixtures/README.md).
const healthyFixtures = "../../testdata/fixtures/healthy"

// runLA202OnAPI discovers c and judges its dataplane with no node read.
func runLA202OnAPI(t *testing.T, c roundtrip.Cluster) (engine.Status, engine.Outcome) {
	t.Helper()
	check := KubeProxyMode(&Env{Setup: c.Discover(t, kube.Selection{}), Reader: &noderead.NodeNetReader{Unavailable: "the test reads no node"}})
	o := check.Run(t.Context())
	st, _ := engine.StatusOf(o)
	assert.Empty(t, catalogue.Undeclared("LA202", o.Findings))
	return st, o
}

func codesOf(o engine.Outcome) []string {
	out := make([]string, 0, len(o.Findings))
	for _, f := range o.Findings {
		out = append(out, f.Code)
	}
	return out
}

func TestLA202JudgesEachWayOfImplementingServices(t *testing.T) {
	cases := []struct {
		name    string
		overlay string
		status  engine.Status
		code    string
		says    string
		// fixed: the printed fix, run against the fake API, makes the check pass.
		fixed bool
	}{
		{"kubeadm in iptables mode", "", engine.StatusPass, "LA202-MODE", "iptables mode (ConfigMap kube-system/kube-proxy key config.conf", false},
		{"kubeadm with mode left out runs iptables", kubeProxyConfigMap(""), engine.StatusPass, "LA202-MODE", "(not set: iptables)", false},
		{"kubeadm in nftables mode", kubeProxyConfigMap("nftables"), engine.StatusPass, "LA202-MODE", "nftables mode", false},
		{"kubeadm in IPVS mode with node addresses", kubeProxyConfigMap("ipvs"), engine.StatusFail, "LA202-IPVS-NODE-ADDRESSES", "10.0.10.12 (node-2)", true},
		{"a DaemonSet with --proxy-mode ipvs", kubeProxyFlagDaemonSet, engine.StatusFail, "LA202-IPVS-NODE-ADDRESSES", "the container's --proxy-mode=ipvs", true},
		{"a mode kube-proxy refuses", kubeProxyConfigMap("userspace"), engine.StatusWarn, "LA202-MODE-UNKNOWN", `"userspace"`, false},
		{"nothing found", noKubeProxy, engine.StatusWarn, "LA202-NOT-FOUND", "no Calico (no DaemonSet calico-node)", false},
		{"Cilium's kube-proxy replacement", noKubeProxy + "---\n" + ciliumKPR, engine.StatusPass, "LA202-REPLACED", "Cilium's kube-proxy replacement is on", false},
		{"Calico's eBPF dataplane", noKubeProxy + "---\n" + calicoNodeBPF, engine.StatusPass, "LA202-REPLACED", "FELIX_BPFENABLED=true", false},
		{"Calico without eBPF and no kube-proxy", noKubeProxy + "---\n" + strings.Replace(calicoNodeBPF, `value: "true"`, `value: "false"`, 1), engine.StatusWarn, "LA202-NOT-FOUND", "Calico's eBPF dataplane is off", false},
		{"Calico's eBPF dataplane from the Installation", noKubeProxy + "---\n" + calicoOperator("BPF"), engine.StatusPass, "LA202-REPLACED", "linuxDataplane=BPF", false},
		{"Calico's nftables dataplane and no kube-proxy", noKubeProxy + "---\n" + calicoOperator("Nftables"), engine.StatusWarn, "LA202-NOT-FOUND", "Calico's eBPF dataplane is off (Installation default spec.calicoNetwork.linuxDataplane=Nftables)", false},
		{"Calico's VPP dataplane beside kube-proxy", calicoOperator("VPP"), engine.StatusWarn, "LA202-UNMODELLED", "whether it makes externalIPs local to the nodes is not modelled", false},
		{"k3s with --kube-proxy-arg proxy-mode=ipvs", noKubeProxy + "---\n" + k3sIPVSNode, engine.StatusFail, "LA202-IPVS-NODE-ADDRESSES", "--kube-proxy-arg=proxy-mode=ipvs", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := roundtrip.WithOverlay(t, tc.overlay, healthyFixtures)
			st, o := runLA202OnAPI(t, c)
			require.Equal(t, tc.status, st, "%+v", o.Findings)
			require.Contains(t, codesOf(o), tc.code)
			var msgs []string
			var fix string
			for _, f := range o.Findings {
				msgs = append(msgs, f.Message)
				if f.Code == tc.code {
					fix = f.Remediation
				}
			}
			assert.Contains(t, strings.Join(msgs, "\n"), tc.says)
			if st != engine.StatusFail {
				return
			}
			if !tc.fixed {
				assert.Contains(t, fix, "not provable from here", "a fix that cannot be run here says so")
				return
			}
			c.Apply(t, fix)
			st, o = runLA202OnAPI(t, c)
			assert.Equal(t, engine.StatusPass, st, "after the fix:\n%s\n%+v", fix, o.Findings)
			assert.Contains(t, codesOf(o), "LA202-MODE")
		})
	}
}

func TestLA202SaysWhatItCouldNotReadInsteadOfPassing(t *testing.T) {
	setup := roundtrip.WithOverlay(t, noKubeProxy, healthyFixtures).Discover(t, kube.Selection{})
	setup.Dataplane.Unread = append(setup.Dataplane.Unread, "the DaemonSets could not be read: forbidden")
	o := KubeProxyMode(&Env{Setup: setup}).Run(t.Context())
	st, _ := engine.StatusOf(o)
	assert.Equal(t, engine.StatusWarn, st)
	assert.Contains(t, codesOf(o), "LA202-UNREAD")
	assert.Contains(t, codesOf(o), "LA202-NODES-NOT-READ")
}
