package linuxnet

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNATRuleMatchesDestinationAndOutInterfaceAsIptablesDoes(t *testing.T) {
	dst := netip.MustParseAddr("10.244.1.5")
	tests := []struct {
		rule         string
		out          string
		match, known bool
	}{
		{"-A POSTROUTING -s 10.8.0.0/24 -j MASQUERADE", "eth0", true, true},
		{"-A POSTROUTING -s 10.8.0.0/24 -o eth0 -j MASQUERADE", "eth0", true, true},
		{"-A POSTROUTING -s 10.8.0.0/24 -o tun0 -j MASQUERADE", "eth0", false, true},
		{"-A POSTROUTING -s 10.8.0.0/24 -o eth+ -j MASQUERADE", "eth0", true, true},
		{"-A POSTROUTING -s 10.8.0.0/24 ! -o tun0 -j MASQUERADE", "eth0", true, true},
		{"-A POSTROUTING -s 10.8.0.0/24 ! -o eth+ -j MASQUERADE", "eth0", false, true},
		{"-A POSTROUTING -s 10.8.0.0/24 -o eth0 -j MASQUERADE", "", false, false},
		{"-A POSTROUTING -s 10.8.0.0/24 -d 10.96.0.0/12 -j MASQUERADE", "eth0", false, true},
		{"-A POSTROUTING -s 10.8.0.0/24 -d 10.244.0.0/16 -j MASQUERADE", "eth0", true, true},
		{"-A POSTROUTING -s 10.8.0.0/24 ! -d 10.244.0.0/16 -j MASQUERADE", "eth0", false, true},
		{"-A POSTROUTING -s 10.8.0.0/24 ! -d 10.8.0.0/24 -o eth0 -j MASQUERADE", "eth0", true, true},
	}
	for _, tt := range tests {
		r, ok := parseNATRule(tt.rule)
		require.True(t, ok, tt.rule)
		m, k := r.Matches(dst, tt.out)
		assert.Equal(t, tt.match, m, tt.rule)
		assert.Equal(t, tt.known, k, tt.rule)
	}
}
