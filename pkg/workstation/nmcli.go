package workstation

import (
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// linuxInstructions targets NetworkManager with systemd-resolved (Fedora, Ubuntu desktop,
// Debian with GNOME...). The servers are added to the LAN connection's profile, so they apply
// only on that network, together with the zone as a routing domain ("~zone"): systemd-resolved
// then prefers this link for the zone over any other link (a VPN that claims "~." for instance),
// and does not use the zone to complete short names.
//
// What NetworkManager cannot do is give one link two server sets: the added servers join the
// ones DHCP gave the link, and systemd-resolved asks one server of a link at a time. The caveats
// say what follows from that.
func linuxInstructions(ins *Instructions, t Target, opt ConfigOptions) {
	ins.Shell = "a shell (sudo where shown)"
	profile := opt.Connection
	if profile == "" {
		profile = "LAN profile"
		ins.Apply = append(ins.Apply, Step{
			Comment: "Find the profile of the connection to this LAN (NAME:DEVICE:TYPE of the active ones) and use its name below, or pass --connection NAME.",
			Command: "nmcli -t -f NAME,DEVICE,TYPE connection show --active",
		})
	}
	add, del := nmcliDNSArgs(t, "+"), nmcliDNSArgs(t, "-")
	ins.Apply = append(ins.Apply,
		Step{
			Comment: "Add the zone's DNS servers to the profile, with the zone as a routing domain.",
			Command: sh("sudo", "nmcli", "connection", "modify", profile) + " " + add,
		},
		Step{
			Comment: "Re-activate the profile so that NetworkManager hands the new servers to systemd-resolved (the link drops for a second).",
			Command: sh("sudo", "nmcli", "connection", "up", profile),
		})
	ins.Verify = []Step{
		{Comment: "The link of the profile lists the servers and ~" + t.Zone.String() + "; \"Current DNS Server\" must be one of them.", Command: "resolvectl status"},
		{Comment: "A name in the zone resolves to the node addresses through the system resolver.", Command: sh("resolvectl", "query", opt.ProbeName)},
		{Comment: "The same, and the rest of the resolution, checked by the plugin.", Command: clientCheckCommand(t)},
	}
	ins.Remove = []Step{
		{Comment: "Remove the servers and the routing domain from the profile.", Command: sh("sudo", "nmcli", "connection", "modify", profile) + " " + del},
		{Comment: "Re-activate the profile and forget cached answers.", Command: sh("sudo", "nmcli", "connection", "up", profile) + " && resolvectl flush-caches"},
	}

	device := opt.Device
	if device == "" {
		device = "DEVICE" // a placeholder the shell leaves as is
	}
	ins.Transient = []Step{
		{
			Comment: "Set the link's routing domain, then its servers (this order avoids a burst of queries going the old way). This REPLACES the link's servers, so every name asked on this link goes to the zone's servers, whose '.' block forwards the rest.",
			Command: sh("sudo", "resolvectl", "domain", device, "~"+t.Zone.String()) + " && " + sh(append([]string{"sudo", "resolvectl", "dns", device}, probe.AddrStrings(t.Servers)...)...),
		},
	}
	ins.TransientRemove = []Step{
		{
			Comment: "Undo it: re-activating the profile makes NetworkManager set the link's servers and domains again.",
			Command: sh("sudo", "nmcli", "connection", "up", profile) + " && resolvectl flush-caches",
		},
	}
	ins.Caveats = []string{
		"The setting belongs to the connection profile: it applies whenever that profile is active and nowhere else. Use a profile of its own for this LAN; a generic wired profile reused on another network would send " + t.Zone.String() + " to addresses that do not exist there.",
		"systemd-resolved asks one server of a link at a time (its \"Current DNS Server\") and moves to the next only when that one fails. The added servers come before the DHCP ones, so every name asked on this link goes to the zone's servers first (they forward the rest). If they fail once, the link moves to the network's own DNS, which answers " + t.Zone.String() + " with the public (VPN) address, and stays there until the connection comes up again: hence at least two DNS replicas spread over nodes, with a PodDisruptionBudget.",
		"To bring the link back to the zone's servers: resolvectl flush-caches && " + sh("sudo", "nmcli", "connection", "up", profile) + ". `kubectl lanaccess client-check` shows the current server of each link.",
		// NetworkManager, src/core/dns/nm-dns-manager.c, rebuild_domain_lists: "searches are
		// preferred over domains", DHCP's domains are handed to resolved only when the profile
		// has no search of its own. The lab's workstation (NetworkManager 1.42.4) showed it:
		// DHCP's "lan" left the link once ~zone was added.
		"NetworkManager hands systemd-resolved the search domains DHCP gives only while the profile has no ipv4.dns-search of its own: once ~" + t.Zone.String() + " is added, DHCP's domain no longer completes short names. `nmcli -g IP4.DOMAIN device show " + device + "` shows it before the change; keep it with: " +
			sh("sudo", "nmcli", "connection", "modify", profile) + " +ipv4.dns-search DOMAIN",
		"Without systemd-resolved (NetworkManager writing /etc/resolv.conf itself) there is no per-domain routing: the servers go to the top of /etc/resolv.conf and every name is asked of them first.",
	}
}

// nmcliDNSArgs adds (op "+") or removes (op "-") the servers, per address family, and the routing
// domain. nmcli takes a comma-separated list for both.
func nmcliDNSArgs(t Target, op string) string {
	var parts []string
	if v4 := serversOfFamily(t.Servers, 4); len(v4) > 0 {
		parts = append(parts, op+"ipv4.dns", joinAddrs(v4, ","))
	}
	if v6 := serversOfFamily(t.Servers, 6); len(v6) > 0 {
		parts = append(parts, op+"ipv6.dns", joinAddrs(v6, ","))
	}
	parts = append(parts, op+"ipv4.dns-search", "~"+t.Zone.String())
	return sh(parts...)
}

// clientCheckCommand is the plugin's own verification, runnable without cluster access.
func clientCheckCommand(t Target) string {
	args := []string{"kubectl", "lanaccess", "client-check", "--zone", t.Zone.String(), "--dns-server", joinAddrs(t.Servers, ",")}
	if !probe.SameAddrs(t.Servers, t.Answers) {
		args = append(args, "--answer", joinAddrs(t.Answers, ","))
	}
	return sh(args...)
}

// sh is a POSIX shell command line, each word quoted by the shell parser's own rules.
func sh(words ...string) string { return remedy.Command(words...) }
