package workstation

import (
	"bufio"
	"bytes"
	"crypto/sha1" //nolint:gosec // a name-based UUID (RFC 4122 version 5) is SHA-1 by definition; nothing secret
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Inside the workstation's mount namespace, StateDir/run is /run. Everything the daemons read
// lives there, so that a StateDir under the machine's own /run stays reachable.
const (
	// confDir holds the daemons' configuration, seen from inside.
	confDir = "/run/lab-workstation"
	// connectionsDir is NetworkManager's keyfile directory ([keyfile] path=).
	connectionsDir = confDir + "/system-connections"
	// readyFile is created by the holder once every mount is in place.
	readyFile = "/run/.lab-workstation-ready"
	// busSocket is the system bus every client (nmcli, resolvectl, NetworkManager) connects to.
	busSocket = "/run/dbus/system_bus_socket"
)

// dbusConfig is the system bus configuration: the policy of Debian's own
// /usr/share/dbus-1/system.conf (dbus 1.14.10, bus/system.conf.in) without what needs a system
// manager (<user>, <fork/>, <pidfile>, service activation with its setuid helper, syslog), and
// the policy files of the extracted packages (org.freedesktop.resolve1.conf,
// org.freedesktop.NetworkManager.conf) instead of the machine's /usr/share/dbus-1/system.d.
// Without activation, no bus name starts a process this package would not know of.
func dbusConfig(p Packages) string {
	return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <auth>EXTERNAL</auth>
  <listen>unix:path=` + busSocket + `</listen>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="UpdateActivationEnvironment"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Debug.Stats"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <includedir>` + xmlEscape(p.Path("usr/share/dbus-1/system.d")) + `</includedir>
  <includedir>` + xmlEscape(p.Path("etc/dbus-1/system.d")) + `</includedir>
</busconfig>
`
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// networkManagerConfig is NetworkManager.conf(5) for a desktop that uses systemd-resolved (what
// NetworkManager picks by itself when /etc/resolv.conf is resolved's stub): DNS goes to resolved
// over D-Bus, /etc/resolv.conf is never written (it is the machine's), only the workstation's
// interface is managed, and no profile is made up for other devices.
func networkManagerConfig(cfg Config) string {
	level := "INFO"
	if cfg.Debug {
		level = "DEBUG"
	}
	return fmt.Sprintf(`[main]
dns=systemd-resolved
rc-manager=unmanaged
plugins=keyfile
no-auto-default=*
auth-polkit=false

[keyfile]
path=%s
unmanaged-devices=except:interface-name:%s

[connectivity]
enabled=false

[logging]
level=%s
`, connectionsDir, cfg.Interface, level)
}

// keyfile is the connection profile of the workstation's interface (nm-settings-keyfile(5)).
func keyfile(cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[connection]\nid=%s\nuuid=%s\ntype=ethernet\ninterface-name=%s\nautoconnect=true\n\n[ethernet]\n\n[ipv4]\n",
		keyfileEscape(cfg.Profile), profileUUID(cfg.NetNS, cfg.Profile), cfg.Interface)
	ip := cfg.IPv4
	if ip.Method == "manual" {
		fmt.Fprintf(&b, "method=manual\naddress1=%s", ip.Address)
		if ip.Gateway.IsValid() {
			fmt.Fprintf(&b, ",%s", ip.Gateway)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("method=auto\n")
	}
	if len(ip.DNS) > 0 {
		addrs := make([]string, 0, len(ip.DNS))
		for _, a := range ip.DNS {
			addrs = append(addrs, a.String())
		}
		fmt.Fprintf(&b, "dns=%s;\n", strings.Join(addrs, ";"))
	}
	if len(ip.DNSSearch) > 0 {
		fmt.Fprintf(&b, "dns-search=%s;\n", strings.Join(ip.DNSSearch, ";"))
	}
	fmt.Fprintf(&b, "\n[ipv6]\nmethod=%s\n", cfg.IPv6Method)
	return b.String()
}

// keyfileEscape escapes a value for GLib's key file format: backslash, and a leading space that
// would otherwise be dropped.
func keyfileEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	if strings.HasPrefix(s, " ") {
		s = `\s` + s[1:]
	}
	return s
}

// profileUUID is a name-based UUID (version 5): the same profile gets the same UUID in every
// run, so recorded outputs do not change from one run to the next.
func profileUUID(netns, profile string) string {
	h := sha1.Sum([]byte("kubectl-lanaccess-lab-workstation\x00" + netns + "\x00" + profile)) //nolint:gosec // see the import
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// stubResolvConf is what /etc/resolv.conf holds inside: systemd-resolved's stub, as on a desktop
// where /etc/resolv.conf links to /run/systemd/resolve/stub-resolv.conf (resolved reports the
// mode as "foreign" since the file is not that link; it ignores its own stub address in it).
const stubResolvConf = "# kubectl-lanaccess lab workstation: programs ask systemd-resolved's stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\n"

// withServiceUsers returns passwd and group with the users the daemons switch to added when
// missing: systemd-resolved drops its privileges to "systemd-resolve" and refuses to start
// without it (the package's sysusers.d file creates it on a real system).
func withServiceUsers(passwd, group []byte) ([]byte, []byte, error) {
	users := []struct{ name, gecos string }{{"systemd-resolve", "systemd Resolver"}}
	usedUIDs, err := usedIDs(passwd)
	if err != nil {
		return nil, nil, fmt.Errorf("/etc/passwd: %w", err)
	}
	usedGIDs, err := usedIDs(group)
	if err != nil {
		return nil, nil, fmt.Errorf("/etc/group: %w", err)
	}
	p, g := bytes.Clone(passwd), bytes.Clone(group)
	for _, u := range users {
		if hasEntry(passwd, u.name) {
			continue
		}
		id := 999
		for ; id > 100 && (usedUIDs[id] || usedGIDs[id]); id-- {
		}
		if id == 100 {
			return nil, nil, fmt.Errorf("no free system uid for %s", u.name)
		}
		usedUIDs[id], usedGIDs[id] = true, true
		p = appendLine(p, fmt.Sprintf("%s:x:%d:%d:%s:/:/usr/sbin/nologin", u.name, id, id, u.gecos))
		if !hasEntry(group, u.name) {
			g = appendLine(g, fmt.Sprintf("%s:x:%d:", u.name, id))
		}
	}
	return p, g, nil
}

func hasEntry(file []byte, name string) bool {
	sc := bufio.NewScanner(bytes.NewReader(file))
	for sc.Scan() {
		if n, _, ok := strings.Cut(sc.Text(), ":"); ok && n == name {
			return true
		}
	}
	return false
}

// usedIDs reads the third field (uid or gid) of each passwd or group line.
func usedIDs(file []byte) (map[int]bool, error) {
	ids := map[int]bool{}
	sc := bufio.NewScanner(bytes.NewReader(file))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 {
			continue
		}
		if id, err := strconv.Atoi(f[2]); err == nil {
			ids[id] = true
		}
	}
	return ids, sc.Err()
}

func appendLine(b []byte, line string) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return append(b, line+"\n"...)
}

// IPv4 is the IPv4 part of the connection profile.
type IPv4 struct {
	// Method is "auto" (DHCP, the default) or "manual".
	Method string
	// Address and Gateway are the manual address (CIDR) and default gateway.
	Address netip.Prefix
	Gateway netip.Addr
	// DNS and DNSSearch are ipv4.dns and ipv4.dns-search of the profile ("~zone" is a routing
	// domain).
	DNS       []netip.Addr
	DNSSearch []string
}
