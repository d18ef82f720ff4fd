package linuxnet

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Recordings: a network namespace running OpenVPN 2.6.14 in static-key point-to-point mode
// (--ifconfig 10.8.0.1 10.8.0.2) with eth0 10.244.1.5/24; "mixed" adds a tun1 in subnet
// topology (10.9.0.1/24) and a tap0 (10.10.0.1/24). iptables v1.8.9 (nf_tables).
func recorded(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestIPAddrReadsPointToPointPeersAndPlainPrefixes(t *testing.T) {
	ifs := ParseIPAddr(recorded(t, "ip-addr-mixed.txt"))
	names := make([]string, 0, len(ifs))
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	assert.Equal(t, []string{"lo", "tun0", "tun1", "tap0", "uplink", "eth0"}, names)
	tun0 := ifs[1]
	require.Len(t, tun0.IPv4(), 1)
	assert.Equal(t, netip.MustParsePrefix("10.8.0.1/32"), tun0.IPv4()[0].Prefix)
	assert.Equal(t, netip.MustParsePrefix("10.8.0.2/32"), tun0.IPv4()[0].Peer)
	assert.Equal(t, netip.MustParsePrefix("10.9.0.1/24"), ifs[2].IPv4()[0].Prefix)
	assert.False(t, ifs[2].IPv4()[0].Peer.IsValid())
	assert.Equal(t, 11, ifs[5].Index)
	assert.Len(t, ifs[5].Addrs, 2, "eth0 has an IPv4 and a link-local IPv6 address")
}

func TestIPAddrSkipsWhatItCannotRead(t *testing.T) {
	ifs := ParseIPAddr("garbage\n3: eth0    inet 10.244.1.5/24 brd 10.244.1.255 scope global eth0\nx: y inet 1.2.3.4/8\n4: tun0 inet not-an-ip\n" +
		"0: zero inet 1.2.3.4/8\n-5: neg inet 1.2.3.4/8\n6: a:b inet 1.2.3.4/8\n7: .. inet 1.2.3.4/8\n8: abcdefghijklmnop inet 1.2.3.4/8\n")
	require.Len(t, ifs, 1)
	assert.Equal(t, "eth0", ifs[0].Name)
}

// ip-addr-odd-names.txt: iproute2 6.1 in a namespace holding links the kernel accepted, named
// "a@b", "@x", a 15-byte name and `t\inet\1.1.1.1`. `ip -o` prints names as they are, '@' and
// '\' included: cutting at '@' gave "@x" an empty name (the fuzz crasher in
// testdata/fuzz/FuzzParseIPAddr), and reading '\' as the record's line break gave 1.1.1.1 to
// an interface "t".
func TestIPAddrKeepsNamesAsTheKernelHasThem(t *testing.T) {
	ifs := ParseIPAddr(recorded(t, "ip-addr-odd-names.txt"))
	got := map[string]netip.Prefix{}
	for _, i := range ifs {
		require.Len(t, i.Addrs, 1, i.Name)
		got[i.Name] = i.Addrs[0].Prefix
	}
	assert.Equal(t, map[string]netip.Prefix{
		"a@b":             netip.MustParsePrefix("10.1.0.1/24"),
		"@x":              netip.MustParsePrefix("10.1.0.2/24"),
		"abcdefghijklmno": netip.MustParsePrefix("10.2.0.1/24"),
		`t\inet\1.1.1.1`:  netip.MustParsePrefix("10.3.0.1/24"),
	}, got)
}

func TestInterfaceNamesFollowTheKernelsRules(t *testing.T) {
	for _, ok := range []string{"eth0", "@x", "a@b", "eth0+", "-x", "a$b;", "abcdefghijklmno", `t\inet`} {
		assert.True(t, ValidInterfaceName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "a:b", "a/b", "a b", "a\tb", "abcdefghijklmnop"} {
		assert.False(t, ValidInterfaceName(bad), bad)
	}
}

func TestProcRouteSkipsRowsNamingNoPossibleInterface(t *testing.T) {
	rs := ParseProcRoute("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"+
		"a:b\t0000080A\t00000000\t0001\t0\t0\t0\t00FFFFFF\n*\t0000090A\t00000000\t0001\t0\t0\t0\t00FFFFFF\n", false)
	require.Len(t, rs, 1)
	// fib_route_seq_show (net/ipv4/fib_trie.c) prints "*" for a route without a device.
	assert.Equal(t, "*", rs[0].Iface)
}

func TestProcRouteReadsDestinationsGatewaysAndMasks(t *testing.T) {
	rs := ParseProcRoute(recorded(t, "proc-net-route-mixed.txt"), false)
	require.Len(t, rs, 6)
	assert.True(t, rs[0].Default())
	assert.Equal(t, "eth0", rs[0].Iface)
	assert.Equal(t, netip.MustParseAddr("10.244.1.7"), rs[0].Gateway)
	assert.Equal(t, Route{Iface: "tun0", Dest: netip.MustParsePrefix("10.8.0.2/32"), Gateway: netip.MustParseAddr("0.0.0.0")}, rs[1])
	assert.Equal(t, netip.MustParsePrefix("10.9.0.0/24"), rs[2].Dest)
	assert.Equal(t, netip.MustParsePrefix("192.168.77.0/30"), rs[5].Dest)
	be := ParseProcRoute("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\ntun0\t0A080000\t00000000\t0001\t0\t0\t0\tFFFFFF00\n", true)
	require.Len(t, be, 1)
	assert.Equal(t, netip.MustParsePrefix("10.8.0.0/24"), be[0].Dest)
}

func TestIPTablesSaveFindsTheMasqueradeOfThePoolThroughUserChains(t *testing.T) {
	nat := ParseIPTablesSave(recorded(t, "iptables-save-nat-masq.txt"))
	assert.Equal(t, []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING", "LANACCESS-SNAT"}, nat.Chains)
	require.Len(t, nat.Rules, 4)

	got := nat.SourceNATFor(netip.MustParsePrefix("10.8.0.0/24"))
	require.Len(t, got, 2)
	assert.Equal(t, "-A POSTROUTING -s 10.8.0.0/24 -o eth0 -j MASQUERADE", got[0].Raw)
	assert.Equal(t, "eth0", got[0].OutIface)
	assert.Equal(t, "-A POSTROUTING ! -s 10.10.0.0/24 -o uplink -j MASQUERADE", got[1].Raw)

	snat := nat.SourceNATFor(netip.MustParsePrefix("10.9.0.0/24"))
	require.Len(t, snat, 2)
	assert.Equal(t, "SNAT", snat[0].Target)
	assert.Equal(t, "10.244.1.5", snat[0].ToSource)
	assert.Equal(t, netip.MustParsePrefix("10.96.0.0/12"), snat[0].Dest)

	assert.Empty(t, nat.SourceNATFor(netip.MustParsePrefix("10.10.0.0/24")), "the negated source excludes this pool")
	assert.Empty(t, ParseIPTablesSave(recorded(t, "iptables-save-nat-empty.txt")).SourceNATFor(netip.MustParsePrefix("10.8.0.0/24")))
}

func TestAnAcceptForThePoolStopsTheWalk(t *testing.T) {
	nat := ParseIPTablesSave("*nat\n:POSTROUTING ACCEPT [0:0]\n-A POSTROUTING -s 10.8.0.0/16 -j ACCEPT\n-A POSTROUTING -j MASQUERADE\nCOMMIT\n")
	assert.Empty(t, nat.SourceNATFor(netip.MustParsePrefix("10.8.0.0/24")))
	assert.Len(t, nat.SourceNATFor(netip.MustParsePrefix("10.9.0.0/24")), 1)
}

func TestIPTablesSaveIgnoresOtherTablesAndKeepsQuotedComments(t *testing.T) {
	nat := ParseIPTablesSave("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j MASQUERADE\nCOMMIT\n*nat\n:POSTROUTING ACCEPT [0:0]\n" +
		`-A POSTROUTING -s 10.8.0.0/24 -m comment --comment "openvpn clients" -j MASQUERADE` + "\n-A POSTROUTING -s bogus -j MASQUERADE\nCOMMIT\n")
	require.Len(t, nat.Rules, 1)
	assert.Equal(t, "MASQUERADE", nat.Rules[0].Target)
}

func TestResolvConfGivesNameserversAndTheClusterDomain(t *testing.T) {
	rc := ParseResolvConf(recorded(t, "resolv-cluster.conf"))
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, rc.Nameservers)
	assert.Equal(t, "cluster.local", rc.ClusterDomain())
	assert.Equal(t, "", ParseResolvConf("nameserver 192.168.1.1\nsearch lan\n").ClusterDomain())
}

func TestOpenVPNServerConfigGivesPoolPushesAndStatusFile(t *testing.T) {
	var c OpenVPNConfig
	c.ParseOpenVPNConfig(recorded(t, "openvpn-server.conf"))
	assert.Equal(t, netip.MustParsePrefix("10.8.0.0/24"), c.ClientPool())
	assert.Equal(t, "tun0", c.Dev)
	assert.Equal(t, "1194", c.Port)
	assert.Equal(t, "/tmp/openvpn-status.log", c.StatusFile)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, c.PushDNS)
	assert.Equal(t, []string{"svc.cluster.local"}, c.PushDomain)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("10.244.0.0/16")}, c.PushRoutes)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("192.168.254.0/24")}, c.Routes)
}

func TestOpenVPNCommandLinesGiveThePeerOrTheConfigFile(t *testing.T) {
	var p2p OpenVPNConfig
	p2p.ParseOpenVPNArgs([]string{"openvpn", "--daemon", "vr-srv", "--dev", "tun0", "--secret", "/tmp/vr.key", "--ifconfig", "10.8.0.1", "10.8.0.2", "--push", "dhcp-option DNS 10.96.0.10"})
	assert.Equal(t, netip.MustParsePrefix("10.8.0.2/32"), p2p.ClientPool())
	assert.Equal(t, netip.MustParseAddr("10.8.0.1"), p2p.Local)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, p2p.PushDNS)

	var file OpenVPNConfig
	file.ParseOpenVPNArgs([]string{"/usr/sbin/openvpn", "/etc/openvpn/openvpn.conf"})
	assert.Equal(t, []string{"/etc/openvpn/openvpn.conf"}, file.ConfigFiles)
	assert.False(t, file.ClientPool().IsValid())

	var pool OpenVPNConfig
	pool.ParseOpenVPNConfig("mode server\nifconfig 10.8.0.1 255.255.255.0\nifconfig-pool 10.8.0.100 10.8.0.120\n")
	assert.Equal(t, netip.MustParsePrefix("10.8.0.96/27"), pool.PoolRange)
	assert.Equal(t, netip.MustParsePrefix("10.8.0.96/27"), pool.ClientPool())
	assert.Equal(t, netip.MustParsePrefix("10.8.0.0/24"), pool.SubnetIfconfig)
}

func TestOpenVPNStatusFilesOfEveryVersionGiveTheConnectedClients(t *testing.T) {
	v1 := "OpenVPN CLIENT LIST\nUpdated,2026-11-30 03:00:00\nCommon Name,Real Address,Bytes Received,Bytes Sent,Connected Since\nlaptop,192.168.1.20:51515,4000,5000,2026-11-30 02:59:00\n" +
		"ROUTING TABLE\nVirtual Address,Common Name,Real Address,Last Ref\n10.8.0.6,laptop,192.168.1.20:51515,2026-11-30 03:00:00\nGLOBAL STATS\nMax bcast/mcast queue length,0\nEND\n"
	v2 := "TITLE,OpenVPN 2.6.14\nHEADER,ROUTING_TABLE,Virtual Address,Common Name,Real Address,Last Ref,Last Ref (time_t)\nROUTING_TABLE,10.8.0.6,laptop,192.168.1.20:51515,2026-11-30 03:00:00,1796007600\nROUTING_TABLE,10.8.0.10,phone,192.168.1.21:40000,2026-11-30 03:00:00,1796007600\n"
	v3 := "ROUTING_TABLE\t10.8.0.14\tdesk\t192.168.1.22:1194\n"
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.8.0.6")}, ParseOpenVPNStatus(v1))
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.8.0.6"), netip.MustParseAddr("10.8.0.10")}, ParseOpenVPNStatus(v2))
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.8.0.14")}, ParseOpenVPNStatus(v3))
	assert.Empty(t, ParseOpenVPNStatus("HEADER,ROUTING_TABLE,Virtual Address\n"))
}

// kube-proxy's and the lab's masquerades only rewrite marked or DNAT'ed packets: they are not
// the pool's masquerade.
func TestConditionalMasqueradesDoNotCountForThePool(t *testing.T) {
	nat := ParseIPTablesSave(`*nat
:POSTROUTING ACCEPT [0:0]
:KUBE-POSTROUTING - [0:0]
:LAB-POSTROUTING - [0:0]
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A POSTROUTING -j LAB-POSTROUTING
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A LAB-POSTROUTING -m conntrack --ctstate DNAT -j MASQUERADE
-A LAB-POSTROUTING -p tcp -s 10.8.0.0/24 -j MASQUERADE
COMMIT
`)
	assert.Empty(t, nat.SourceNATFor(netip.MustParsePrefix("10.8.0.0/24")))
	nat.Rules = append(nat.Rules, NATRule{Chain: "LAB-POSTROUTING", Target: "MASQUERADE", Raw: "-A LAB-POSTROUTING -j MASQUERADE"})
	got := nat.SourceNATFor(netip.MustParsePrefix("10.8.0.0/24"))
	require.Len(t, got, 1)
	assert.Equal(t, "-A LAB-POSTROUTING -j MASQUERADE", got[0].Raw)
}
