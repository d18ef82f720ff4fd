package workstation

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// configureCommand is the plugin command that prints this machine's setup. It names the zone and
// servers so that it works without access to the cluster.
func configureCommand(env Env) string {
	cmd := "kubectl lanaccess client-config --os " + string(env.OS) + " --zone " + env.Target.Zone.String() + " --dns-server " + probe.JoinAddrsSep(env.Target.Servers, ",")
	if !probe.SameAddrs(env.Target.Servers, env.Target.Answers) {
		cmd += " --answer " + probe.JoinAddrsSep(env.Target.Answers, ",")
	}
	if env.OS == ws.Linux && env.Connection != "" {
		cmd += " --connection " + remedy.Quote(env.Connection)
	}
	return cmd
}

// whereToLook points at the state that explains a wrong answer on os.
func whereToLook(os ws.OS) string {
	switch os {
	case ws.Linux:
		return " (WS004 shows which server each link asks)"
	case ws.Windows:
		return " (Get-DnsClientNrptPolicy shows the rules in effect)"
	case ws.MacOS:
		return " (scutil --dns shows the resolvers in effect)"
	}
	return ""
}

// resetCommands bring the zone back to its servers on os: forget cached answers and, on Linux,
// make systemd-resolved start again from the first server of the link. profile is the
// NetworkManager profile when known.
func resetCommands(env Env, profile string) string {
	switch env.OS {
	case ws.Linux:
		if profile == "" {
			profile = env.Connection
		}
		if profile == "" {
			profile = "<LAN profile>"
		}
		return "resolvectl flush-caches\nsudo nmcli connection up " + remedy.Quote(profile)
	case ws.Windows:
		return "Clear-DnsClientCache\nGet-DnsClientNrptPolicy | Where-Object Namespace -eq " + remedy.PowerShellQuote("."+env.Target.Zone.String()) + "   # the zone's rule must be listed"
	case ws.MacOS:
		return "sudo dscacheutil -flushcache; sudo killall -HUP mDNSResponder\n" + remedy.Command("cat", "/etc/resolver/"+env.Target.Zone.String()) + "   # must list the zone's servers"
	}
	return configureCommand(env)
}

func withList(ev map[string]any, key string, addrs []netip.Addr) map[string]any {
	ev[key] = probe.AddrStrings(addrs)
	return ev
}

func containsAny(set []netip.Addr, addrs ...netip.Addr) bool {
	for _, a := range addrs {
		if slices.Contains(set, a) {
			return true
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
