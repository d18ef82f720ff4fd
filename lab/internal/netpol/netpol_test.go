package netpol

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

func TestHookRulesQueueWhatTheEnforcersPostroutingChainQueues(t *testing.T) {
	r := HookRules("10.244.4.0/24")
	for _, want := range []string{
		"-A LAB-NETPOL -p udp --dport 53 -j RETURN",
		"-A LAB-NETPOL -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
		"-A LAB-NETPOL -s 10.244.4.0/24 -j NFQUEUE --queue-num 98",
		"-A LAB-NETPOL -d 10.244.4.0/24 -j NFQUEUE --queue-num 98",
		"-A LAB-NETPOL-DNS -p udp --dport 53 -d 10.244.4.0/24 -j NFQUEUE --queue-num 98",
		"-A OUTPUT -m owner --uid-owner 0 -j RETURN\n-A OUTPUT -j LAB-NETPOL",
	} {
		assert.Contains(t, r, want)
	}
	assert.True(t, strings.HasPrefix(r, "*security\n"))
	assert.True(t, strings.HasSuffix(r, "COMMIT\n"))
}

func TestParseVerdictsSumsThePacketCountByVerdict(t *testing.T) {
	v := ParseVerdicts(`# TYPE kube_network_policies_packet_count counter
kube_network_policies_packet_count{family="IPv4",protocol="UDP",verdict="accept"} 2
kube_network_policies_packet_count{family="IPv4",protocol="TCP",verdict="accept"} 3
kube_network_policies_packet_count{family="IPv4",protocol="UDP",verdict="drop"} 1
`)
	assert.Equal(t, map[string]float64{"accept": 5, "drop": 1}, v)
}

func TestSpecMountsTheServiceAccountAndNamesTheNode(t *testing.T) {
	s := Spec(layout.Default(), "/c/kube-network-policies", "node-vpn")
	argv := strings.Join(s.Argv, " ")
	assert.Equal(t, "node-vpn", s.NS)
	assert.Contains(t, argv, Match("node-vpn"))
	assert.Contains(t, argv, "--metrics-bind-address=127.0.0.1:10330")
	assert.Contains(t, argv, "unshare --mount --propagation private")
	assert.Contains(t, s.Env, "KUBERNETES_SERVICE_HOST=10.0.10.10")
	assert.Contains(t, s.Env, "KUBERNETES_SERVICE_PORT=6443")
}
