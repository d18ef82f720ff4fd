package workstation

import (
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// configureCommand is the plugin command that prints this machine's setup. It names the zone and
// servers so that it works without access to the cluster.
func configureCommand(env CheckEnv) string {
	cmd := "kubectl lanaccess client-config --os " + string(env.OS) + " --zone " + env.Target.Zone + " --dns-server " + joinAddrs(env.Target.Servers, ",")
	if !probe.SameAddrs(env.Target.Servers, env.Target.Answers) {
		cmd += " --answer " + joinAddrs(env.Target.Answers, ",")
	}
	if env.OS == Linux && env.Connection != "" {
		cmd += " --connection " + dq(env.Connection)
	}
	return cmd
}

// whereToLook points at the state that explains a wrong answer on os.
func whereToLook(os OS) string {
	switch os {
	case Linux:
		return " (WS004 shows which server each link asks)"
	case Windows:
		return " (Get-DnsClientNrptPolicy shows the rules in effect)"
	case MacOS:
		return " (scutil --dns shows the resolvers in effect)"
	}
	return ""
}

// resetCommands bring the zone back to its servers on os: forget cached answers and, on Linux,
// make systemd-resolved start again from the first server of the link. profile is the
// NetworkManager profile when known.
func resetCommands(env CheckEnv, profile string) string {
	switch env.OS {
	case Linux:
		if profile == "" {
			profile = env.Connection
		}
		if profile == "" {
			profile = "<LAN profile>"
		}
		return "resolvectl flush-caches\nsudo nmcli connection up " + dq(profile)
	case Windows:
		return "Clear-DnsClientCache\nGet-DnsClientNrptPolicy | Where-Object Namespace -eq " + psq("."+env.Target.Zone) + "   # the zone's rule must be listed"
	case MacOS:
		return "sudo dscacheutil -flushcache; sudo killall -HUP mDNSResponder\ncat /etc/resolver/" + env.Target.Zone + "   # must list the zone's servers"
	}
	return configureCommand(env)
}

func withList(ev map[string]any, key string, addrs []netip.Addr) map[string]any {
	ev[key] = probe.AddrStrings(addrs)
	return ev
}

func containsAny(set []netip.Addr, addrs ...netip.Addr) bool {
	for _, a := range addrs {
		for _, s := range set {
			if s == a {
				return true
			}
		}
	}
	return false
}

func filterIn(addrs, set []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if containsAny(set, a) {
			out = append(out, a)
		}
	}
	return out
}

func filterOut(addrs, set []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if !containsAny(set, a) {
			out = append(out, a)
		}
	}
	return out
}

func lines(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}
