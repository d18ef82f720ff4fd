package vpn

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// A route "via <pod IP>" on a ptp node: ptp routes the pod IP with scope host, and the kernel
// uses a gateway only when it resolves through a link-scope route (recorded from node-vpn in the
// lab with the real ptp plugin, v1.10.0).
func TestAGatewayRoutedWithScopeHostIsNotUsed(t *testing.T) {
	pool := netip.MustParsePrefix("10.8.0.0/24")
	via := linuxnet.Route{Dest: pool, Gateway: netip.MustParseAddr("10.244.4.1"), Iface: "veth1674d88e"}
	cases := []struct {
		name   string
		route  linuxnet.Route
		lines  []string
		reason string // "" when the gateway is used
	}{
		{"ptp's scope-host route to the pod: ignored", via,
			[]string{"10.8.0.0/24 via 10.244.4.1 dev veth1674d88e", "10.244.4.1 dev veth1674d88e scope host"},
			"its gateway 10.244.4.1 is routed with scope host (10.244.4.1 dev veth1674d88e scope host)"},
		{"onlink makes it a gateway", via,
			[]string{"10.8.0.0/24 via 10.244.4.1 dev veth1674d88e onlink", "10.244.4.1 dev veth1674d88e scope host"}, ""},
		{"Calico's link-scope route to the pod: used", via,
			[]string{"10.8.0.0/24 via 10.244.4.1 dev cali1234", "10.244.4.1 dev cali1234 scope link"}, ""},
		{"a gateway on the node's subnet: used", linuxnet.Route{Dest: pool, Gateway: netip.MustParseAddr("10.0.10.14"), Iface: "eth0"},
			[]string{"10.8.0.0/24 via 10.0.10.14 dev eth0 proto bird", "10.0.10.0/24 dev eth0 proto kernel scope link src 10.0.10.11"}, ""},
		{"no gateway", linuxnet.Route{Dest: pool, Iface: "tun0"}, []string{"10.8.0.0/24 dev tun0 scope host"}, ""},
		{"ip route not read: not told", via, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gatewayIgnored(facts.NodeRead{Node: "node-vpn", IPRoutes: tc.lines}, tc.route)
			if tc.reason == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.reason)
			assert.Contains(t, got, "node node-vpn looks for each address of 10.8.0.0/24 on veth1674d88e itself")
		})
	}
}
