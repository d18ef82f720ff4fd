package workstation

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewTarget(t *testing.T) {
	t.Run("the zone loses its trailing dot and case, addresses are sorted without duplicates", func(t *testing.T) {
		got, err := NewTarget("Apps.Example.COM.", []string{"10.0.10.13,10.0.10.11", " 10.0.10.12", "10.0.10.11"}, nil)
		require.NoError(t, err)
		assert.Equal(t, "apps.example.com", got.Zone.String())
		want := []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.13")}
		assert.Equal(t, want, got.Servers)
		assert.Equal(t, want, got.Answers, "answers default to the servers")
	})
	t.Run("answers given apart are kept apart", func(t *testing.T) {
		got, err := NewTarget("apps.example.com", []string{"10.0.10.11"}, []string{"10.0.10.21"})
		require.NoError(t, err)
		assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.10.21")}, got.Answers)
	})
	for _, tc := range []struct {
		name, zone string
		servers    []string
		wantErr    string
	}{
		{"an invalid address names the address", "apps.example.com", []string{"10.0.10.300"}, `"10.0.10.300"`},
		{"a scoped IPv6 address is refused", "apps.example.com", []string{"fe80::1%eth0"}, "scoped"},
		{"no server is refused", "apps.example.com", nil, "no DNS server"},
		{"the root zone is refused", ".", []string{"10.0.10.11"}, "root"},
		{"a zone with shell characters is refused", "apps.example.com;rm", []string{"10.0.10.11"}, "not a DNS host name"},
		{"a zone with a space is refused", "apps example.com", []string{"10.0.10.11"}, "zone"},
		// The zone goes into nmcli, resolvectl, PowerShell and /etc/resolver commands: a newline
		// would start a command of its own, braces and parentheses are PowerShell syntax.
		{"a zone with a newline is refused", "apps.example.com\nevil.example.com", []string{"10.0.10.11"}, "zone"},
		{"a zone with braces is refused", "apps{x}(y).example.com", []string{"10.0.10.11"}, "zone"},
		{"a zone with a control character is refused", "apps\x1b[2J.example.com", []string{"10.0.10.11"}, "zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTarget(tc.zone, tc.servers, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
