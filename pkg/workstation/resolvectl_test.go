package workstation

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/workstationtest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// systemd 245 format (Ubuntu 20.04): one setting per line, lists continued on the next lines.
// Hand-written: the real outputs in testdata/real come from Debian 12's systemd 252, and no run
// of it prints this older layout.
const resolvectlOld = `Global
       LLMNR setting: no
MulticastDNS setting: no
  DNSOverTLS setting: no
      DNSSEC setting: no
    DNSSEC supported: no
  Current DNS Server: 10.0.10.12
         DNS Servers: 10.0.10.12
                      fe80::1%2
          DNS Domain: ~apps.example.com

Link 2 (eth0)
      Current Scopes: DNS
DefaultRoute setting: yes
       LLMNR setting: yes
  Current DNS Server: 192.168.1.1
         DNS Servers: 10.0.10.11
                      192.168.1.1
                      [2001:db8::53]:5353#dns.example
          DNS Domain: lan
`

// The real outputs are `resolvectl status --no-pager` of Debian 12's systemd-resolved 252 (see
// each file's header): eth0 is the LAN link NetworkManager configures, tun0 a VPN's link.
func TestParseResolvectlStatus(t *testing.T) {
	addr := netip.MustParseAddr
	addrs := func(s ...string) []netip.Addr {
		out := make([]netip.Addr, len(s))
		for i, a := range s {
			out[i] = addr(a)
		}
		return out
	}
	zoneAndDHCP := addrs("10.0.10.11", "10.0.10.12", "10.0.10.13", "10.0.10.254")

	t.Run("after client-config: the link's servers, current server, routing domain and DefaultRoute", func(t *testing.T) {
		links := ParseResolvectlStatus(workstationtest.Output(t, "configured-status"))
		require.Len(t, links, 3)
		assert.Equal(t, "Global", links[0].Name)
		assert.Empty(t, links[0].Servers)

		lan := links[1]
		assert.Equal(t, "eth0", lan.Name)
		assert.Equal(t, 2, lan.Index)
		assert.Equal(t, addr("10.0.10.11"), lan.CurrentServer)
		assert.Equal(t, zoneAndDHCP, lan.Servers)
		assert.Equal(t, []string{"~apps.example.com"}, lan.Domains)
		require.NotNil(t, lan.DefaultRoute)
		assert.True(t, *lan.DefaultRoute)

		tun := links[2]
		assert.Equal(t, "tun0", tun.Name)
		assert.False(t, tun.CurrentServer.IsValid())
		assert.Empty(t, tun.Servers)
		require.NotNil(t, tun.DefaultRoute)
		assert.False(t, *tun.DefaultRoute)
	})

	t.Run("one link alone, as resolvectl status IFACE prints it", func(t *testing.T) {
		links := ParseResolvectlStatus(workstationtest.Output(t, "configured-status-link"))
		require.Len(t, links, 1)
		assert.Equal(t, zoneAndDHCP, links[0].Servers)
	})

	t.Run("the link stuck on the network's DNS", func(t *testing.T) {
		lan := ParseResolvectlStatus(workstationtest.Output(t, "moved-org-status"))[1]
		assert.Equal(t, addr("10.0.10.254"), lan.CurrentServer)
		assert.Equal(t, zoneAndDHCP, lan.Servers)
	})

	t.Run("a VPN link claiming every name", func(t *testing.T) {
		tun := ParseResolvectlStatus(workstationtest.Output(t, "vpn-all-zone-routing-status"))[2]
		assert.Equal(t, addrs("10.8.0.1"), tun.Servers)
		assert.Equal(t, []string{"~."}, tun.Domains)
		require.NotNil(t, tun.DefaultRoute)
		assert.True(t, *tun.DefaultRoute, "resolved makes a link with ~. a default route")
	})

	t.Run("a server list wrapped over two lines, IPv6, a port and a server name", func(t *testing.T) {
		lan := ParseResolvectlStatus(workstationtest.Output(t, "wide-status"))[1]
		assert.Equal(t, addrs("10.0.10.11", "10.0.10.12", "10.0.10.13", "fd00:10::11", "fd00:10::12", "fd00:10::13", "10.0.10.254", "10.0.10.254"), lan.Servers)
		assert.Equal(t, []string{"~apps.example.com", "lan", "corp.example.com", "~internal.example.com"}, lan.Domains)
	})

	t.Run("the global section of systemd 252 prints some keys without a colon", func(t *testing.T) {
		// resolvectl.c of systemd v252 (status_global): dump_list(table, "DNS Servers", ...),
		// "Fallback DNS Servers" and "DNS Domain" have no colon there, while the links' keys and
		// the global "Current DNS Server:" do.
		links := ParseResolvectlStatus(workstationtest.Output(t, "global-status"))
		require.Len(t, links, 3)
		global := links[0]
		assert.Equal(t, addr("10.0.10.254"), global.CurrentServer)
		assert.Equal(t, addrs("10.0.10.254"), global.Servers)
		assert.Equal(t, []string{"corp.example"}, global.Domains)
		assert.Equal(t, addrs("10.0.10.11", "10.0.10.12", "10.0.10.13", "10.0.10.254"), links[1].Servers)
	})

	t.Run("the old form with continuation lines, scoped and named servers", func(t *testing.T) {
		links := ParseResolvectlStatus([]byte(resolvectlOld))
		require.Len(t, links, 2)
		global := links[0]
		assert.Equal(t, addr("10.0.10.12"), global.CurrentServer)
		assert.Equal(t, []netip.Addr{addr("10.0.10.12"), addr("fe80::1")}, global.Servers, "an IPv6 continuation line is a server, not a key")
		assert.Equal(t, []string{"~apps.example.com"}, global.Domains)

		eth := links[1]
		assert.Equal(t, addr("192.168.1.1"), eth.CurrentServer)
		assert.Equal(t, []netip.Addr{addr("10.0.10.11"), addr("192.168.1.1"), addr("2001:db8::53")}, eth.Servers)
		require.NotNil(t, eth.DefaultRoute)
		assert.True(t, *eth.DefaultRoute)
	})

	t.Run("output that is not resolvectl's gives no link", func(t *testing.T) {
		assert.Empty(t, ParseResolvectlStatus([]byte("Failed to get global data: Unit dbus-org.freedesktop.resolve1.service not found.\n")))
		assert.Empty(t, ParseResolvectlStatus(nil))
	})
}

func TestHasRoutingDomainFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		domains []string
		match   bool
		labels  int
	}{
		{"the zone as a routing domain matches with all its labels", []string{"~apps.example.com"}, true, 3},
		{"a parent search domain matches with fewer labels", []string{"example.com"}, true, 2},
		{"the catch-all routing domain matches with zero labels", []string{"~."}, true, 0},
		{"the best of several domains counts", []string{"~.", "lan", "~apps.example.com."}, true, 3},
		{"a sibling does not match", []string{"~other.example.com", "lan"}, false, -1},
		{"a longer name below the zone does not match the zone", []string{"~x.apps.example.com"}, false, -1},
		{"no domain, no match", nil, false, -1},
		{"a domain that is not a DNS name claims nothing", []string{"~apps.example.com\n", "~{example.com}"}, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, n := ResolvedLink{Domains: tc.domains}.HasRoutingDomainFor(zone.MustParse("apps.example.com"))
			assert.Equal(t, tc.match, ok)
			assert.Equal(t, tc.labels, n)
		})
	}
}

func TestParseResolvConf(t *testing.T) {
	t.Run("systemd-resolved's upstream list, with its comment after the third server", func(t *testing.T) {
		assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.13"), netip.MustParseAddr("10.0.10.254")},
			ParseResolvConf(workstationtest.Output(t, "configured-resolv-conf")))
		assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.53")}, ParseResolvConf(workstationtest.Output(t, "configured-stub-resolv-conf")))
	})
	// Hand-written: a resolv.conf that no systemd-resolved writes (another resolver's).
	got := ParseResolvConf([]byte("# generated\nsearch lan\nnameserver 192.168.1.1\nnameserver 10.0.10.11 # lan-dns\noptions edns0\nnameserver fe80::1%eth0\nnameserver bogus\n"))
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("fe80::1")}, got)
}
