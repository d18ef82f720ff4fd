package workstation

import (
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// macosInstructions write /etc/resolver/<zone> (resolver(5)): one file per domain, read by the
// system resolver (mDNSResponder) for the zone and everything below it.
func macosInstructions(ins *Instructions, t Target, opt ConfigOptions) {
	ins.Shell = "Terminal (sudo where shown)"
	file := "/etc/resolver/" + t.Zone.String()
	var lines strings.Builder
	for _, a := range probe.AddrStrings(t.Servers) {
		lines.WriteString("nameserver " + a + "\\n")
	}
	ins.Apply = []Step{
		{Comment: "One file per domain in /etc/resolver.", Command: "sudo mkdir -p /etc/resolver"},
		{Comment: "The zone's DNS servers, in the order they are tried.", Command: remedy.Command("printf", lines.String()) + " | " + remedy.Command("sudo", "tee", file) + " >/dev/null"},
		{Comment: "Forget answers cached before the file existed.", Command: "sudo dscacheutil -flushcache; sudo killall -HUP mDNSResponder"},
	}
	ins.Verify = []Step{
		{Comment: "The system resolver lists a resolver for the zone.", Command: "scutil --dns | " + remedy.Command("grep", "-B1", "-A4", "domain   : "+t.Zone.String())},
		{Comment: "A name in the zone resolves to the node addresses through the system resolver (dig and nslookup bypass /etc/resolver; this does not).", Command: remedy.Command("dscacheutil", "-q", "host", "-a", "name", opt.ProbeName)},
		{Comment: "The same, and the rest of the resolution, checked by the plugin.", Command: clientCheckCommand(t)},
	}
	ins.Remove = []Step{
		{Comment: "Remove the zone's file.", Command: remedy.Command("sudo", "rm", "-f", file)},
		{Comment: "Forget the zone's cached answers.", Command: "sudo dscacheutil -flushcache; sudo killall -HUP mDNSResponder"},
	}
	ins.Caveats = []string{
		"The file is global: it applies on every network. Off-site the zone's servers cannot be reached, so names in " + t.Zone.String() + " stop resolving (the rest of the Internet works, which makes the symptom confusing) until the file is removed.",
		"dig, nslookup and host read /etc/resolv.conf and ignore /etc/resolver: test with dscacheutil, ping or a browser, or with `kubectl lanaccess client-check`.",
	}
}
