package workstation

import (
	"encoding/xml"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testPackages = Packages{Dir: "/cache/workstation-252", Versions: map[string]string{"dnsmasq-base": "2.90"}}

func TestKeyfile(t *testing.T) {
	t.Run("DHCP", func(t *testing.T) {
		got := keyfile(Config{NetNS: "laptop", Interface: "eth0", Profile: "Wired connection 1", IPv4: IPv4{Method: "auto"}, IPv6Method: "disabled"})
		assert.Equal(t, `[connection]
id=Wired connection 1
uuid=`+profileUUID("laptop", "Wired connection 1")+`
type=ethernet
interface-name=eth0
autoconnect=true

[ethernet]

[ipv4]
method=auto

[ipv6]
method=disabled
`, got)
	})
	t.Run("manual, with servers and a routing domain", func(t *testing.T) {
		got := keyfile(Config{NetNS: "laptop", Interface: "eth0", Profile: ` lan\office`, IPv4: IPv4{Method: "manual",
			Address: netip.MustParsePrefix("10.0.10.40/24"), Gateway: netip.MustParseAddr("10.0.10.254"),
			DNS: []netip.Addr{netip.MustParseAddr("10.0.10.254")}, DNSSearch: []string{"~apps.example.com", "lan"}}})
		assert.Contains(t, got, "id=\\slan\\\\office\n", "GLib key file escapes")
		assert.Contains(t, got, "method=manual\naddress1=10.0.10.40/24,10.0.10.254\ndns=10.0.10.254;\ndns-search=~apps.example.com;lan;\n")
	})
	t.Run("IPv6 left to others", func(t *testing.T) {
		got := keyfile(Config{NetNS: "laptop", Interface: "eth0", Profile: "lan", IPv4: IPv4{Method: "auto"}, IPv6Method: "ignore"})
		assert.Contains(t, got, "\n[ipv6]\nmethod=ignore\n")
	})
}

func TestProfileUUIDIsStableAndVersion5(t *testing.T) {
	a := profileUUID("laptop", "lan")
	assert.Equal(t, a, profileUUID("laptop", "lan"))
	assert.NotEqual(t, a, profileUUID("laptop", "lan2"))
	require.Len(t, a, 36)
	assert.Equal(t, byte('5'), a[14], "version nibble")
	assert.Contains(t, "89ab", string(a[19]), "RFC 4122 variant")
}

func TestDBusConfigIsXMLWithThePackagesPolicies(t *testing.T) {
	conf := dbusConfig(Packages{Dir: "/cache/a&b"})
	var doc struct {
		Listen     string   `xml:"listen"`
		IncludeDir []string `xml:"includedir"`
		User       []string `xml:"user"`
	}
	require.NoError(t, xml.Unmarshal([]byte(conf), &doc))
	assert.Equal(t, "unix:path=/run/dbus/system_bus_socket", doc.Listen)
	assert.Equal(t, []string{"/cache/a&b/root/usr/share/dbus-1/system.d", "/cache/a&b/root/etc/dbus-1/system.d"}, doc.IncludeDir)
	assert.Empty(t, doc.User, "the bus runs as root: no messagebus user is needed")
	assert.NotContains(t, conf, "servicedir", "no activation: no process starts behind the test's back")
}

func TestNetworkManagerConfig(t *testing.T) {
	got := networkManagerConfig(Config{Interface: "eth0", Debug: true})
	for _, want := range []string{"dns=systemd-resolved\n", "rc-manager=unmanaged\n", "unmanaged-devices=except:interface-name:eth0\n", "path=/run/lab-workstation/system-connections\n", "level=DEBUG\n"} {
		assert.Contains(t, got, want)
	}
}

func TestWithServiceUsers(t *testing.T) {
	passwd := []byte("root:x:0:0:root:/root:/bin/bash\nmessagebus:x:999:999::/nonexistent:/usr/sbin/nologin")
	group := []byte("root:x:0:\nmessagebus:x:999:\nstaff:x:998:\n")
	p, g, err := withServiceUsers(passwd, group)
	require.NoError(t, err)
	assert.Equal(t, string(passwd)+"\nsystemd-resolve:x:997:997:systemd Resolver:/:/usr/sbin/nologin\n", string(p), "the first id free as uid and gid")
	assert.Equal(t, string(group)+"systemd-resolve:x:997:\n", string(g))

	again, _, err := withServiceUsers(p, g)
	require.NoError(t, err)
	assert.Equal(t, p, again, "an existing user is kept")
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Packages: testPackages, NetNS: "laptop", Interface: "eth0", StateDir: "/run/lab/ws", LogDir: "/run/lab/logs"}
	c := ok
	require.NoError(t, c.validate())
	assert.Equal(t, "Wired connection 1", c.Profile)
	assert.Equal(t, "auto", c.IPv4.Method)
	assert.Equal(t, 60*time.Second, c.Timeout)

	for name, edit := range map[string]func(*Config){
		"no namespace":               func(c *Config) { c.NetNS = "" },
		"an interface name too long": func(c *Config) { c.Interface = "averyveryverylongname" },
		"a profile with a newline":   func(c *Config) { c.Profile = "a\nb" },
		"manual without an address":  func(c *Config) { c.IPv4.Method = "manual" },
		"an unknown method":          func(c *Config) { c.IPv4.Method = "link-local" },
		"a search domain with ;":     func(c *Config) { c.IPv4.DNSSearch = []string{"a;b"} },
		"state under /var/lib":       func(c *Config) { c.StateDir = "/var/lib/ws" },
		"packages under /run":        func(c *Config) { c.Packages.Dir = "/run/cache" },
		"no log directory":           func(c *Config) { c.LogDir = "" },
	} {
		c := ok
		edit(&c)
		assert.Error(t, c.validate(), name)
	}
}

func TestDHCPArgs(t *testing.T) {
	c := DHCPConfig{Packages: testPackages, NetNS: "wsdev-org", Interface: "eth0",
		First: netip.MustParseAddr("10.0.10.50"), Last: netip.MustParseAddr("10.0.10.59"), PrefixLen: 24,
		Router: netip.MustParseAddr("10.0.10.254"), DNS: []netip.Addr{netip.MustParseAddr("10.0.10.254"), netip.MustParseAddr("10.0.10.253")},
		Domain: "lan", StateDir: "/tmp/dhcp",
		Routes: []Route{{Dst: netip.MustParsePrefix("198.51.100.0/24"), Via: netip.MustParseAddr("10.0.10.254")}}}
	args, err := c.args()
	require.NoError(t, err)
	all := strings.Join(args, " ")
	assert.Equal(t, "/cache/workstation-252/root/usr/sbin/dnsmasq", args[0])
	for _, want := range []string{"--port=0", "--no-daemon", "--no-ping", "--dhcp-range=10.0.10.50,10.0.10.59,255.255.255.0,3600s",
		"--dhcp-option=option:dns-server,10.0.10.254,10.0.10.253", "--dhcp-option=option:domain-name,lan", "--dhcp-option=option:router,10.0.10.254",
		"--dhcp-option=option:classless-static-route,198.51.100.0/24,10.0.10.254"} {
		assert.Contains(t, all, want)
	}
	c.Router = netip.Addr{}
	args, err = c.args()
	require.NoError(t, err)
	assert.Contains(t, args, "--dhcp-option=option:router", "no router: option 3 given empty, or dnsmasq offers itself")
	c.Last = netip.MustParseAddr("10.0.10.40")
	_, err = c.args()
	assert.Error(t, err, "an empty range")
}

func TestNetmask(t *testing.T) {
	assert.Equal(t, "255.255.255.0", netmask(24))
	assert.Equal(t, "255.255.240.0", netmask(20))
}

func TestRunPath(t *testing.T) {
	assert.Equal(t, "run/lab-workstation/dbus.conf", runPath(confDir+"/dbus.conf"))
	assert.Equal(t, "run/dbus/system_bus_socket", runPath(busSocket))
}
