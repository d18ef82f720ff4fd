package workstation

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// systemd 250+ format (Ubuntu 22.04 and later, Fedora).
const resolvectlModern = `Global
           Protocols: -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported
    resolv.conf mode: stub

Link 2 (enp3s0)
    Current Scopes: DNS
         Protocols: +DefaultRoute -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported
Current DNS Server: 10.0.10.11
       DNS Servers: 10.0.10.11 10.0.10.12 10.0.10.13 192.168.1.1
        DNS Domain: ~apps.example.com lan

Link 3 (wlp2s0)
Current Scopes: none
     Protocols: -DefaultRoute -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported

Link 5 (tailscale0)
    Current Scopes: DNS
         Protocols: -DefaultRoute -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported
Current DNS Server: 100.100.100.100
       DNS Servers: 100.100.100.100 fd7a:115c:a1e0::53
        DNS Domain: tail1234.ts.net ~.
`

// systemd 245 format (Ubuntu 20.04): one setting per line, lists continued on the next lines.
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

func TestParseResolvectlStatus(t *testing.T) {
	addr := netip.MustParseAddr
	t.Run("the one-line form gives servers, current server, domains and DefaultRoute", func(t *testing.T) {
		links := ParseResolvectlStatus([]byte(resolvectlModern))
		require.Len(t, links, 4)
		assert.Equal(t, "Global", links[0].Name)
		assert.Empty(t, links[0].Servers)

		lan := links[1]
		assert.Equal(t, "enp3s0", lan.Name)
		assert.Equal(t, 2, lan.Index)
		assert.Equal(t, addr("10.0.10.11"), lan.CurrentServer)
		assert.Equal(t, []netip.Addr{addr("10.0.10.11"), addr("10.0.10.12"), addr("10.0.10.13"), addr("192.168.1.1")}, lan.Servers)
		assert.Equal(t, []string{"~apps.example.com", "lan"}, lan.Domains)
		require.NotNil(t, lan.DefaultRoute)
		assert.True(t, *lan.DefaultRoute)

		wifi := links[2]
		assert.False(t, wifi.CurrentServer.IsValid())
		require.NotNil(t, wifi.DefaultRoute)
		assert.False(t, *wifi.DefaultRoute)

		ts := links[3]
		assert.Equal(t, []netip.Addr{addr("100.100.100.100"), addr("fd7a:115c:a1e0::53")}, ts.Servers)
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
	got := ParseResolvConf([]byte("# generated\nsearch lan\nnameserver 192.168.1.1\nnameserver 10.0.10.11 # lan-dns\noptions edns0\nnameserver fe80::1%eth0\nnameserver bogus\n"))
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("fe80::1")}, got)
}
