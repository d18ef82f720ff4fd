package workstation

import (
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// windowsInstructions use the Name Resolution Policy Table: a rule maps a namespace to DNS
// servers, and the DNS Client service sends matching names to them only. A namespace with a
// leading dot (".apps.example.com") matches the names below the zone but not the zone's own
// name, so the rule lists both.
func windowsInstructions(ins *Instructions, t Target, opt ConfigOptions) {
	ins.Shell = "PowerShell as Administrator"
	suffix, apex := psq("."+t.Zone.String()), psq(t.Zone.String())
	servers := make([]string, 0, len(t.Servers))
	for _, a := range probe.AddrStrings(t.Servers) {
		servers = append(servers, psq(a))
	}
	ins.Apply = []Step{
		{
			Comment: "Send the zone (names below it and the zone itself) to its DNS servers.",
			Command: "Add-DnsClientNrptRule -Namespace " + suffix + "," + apex + " -NameServers " + strings.Join(servers, ",") + " -Comment 'kubectl-lanaccess'",
		},
		{Comment: "Forget answers cached before the rule existed.", Command: "Clear-DnsClientCache"},
	}
	ins.Verify = []Step{
		{Comment: "The effective policy lists the rule.", Command: "Get-DnsClientNrptPolicy | Where-Object Namespace -eq " + suffix},
		{Comment: "A name in the zone resolves to the node addresses through the system resolver.", Command: "Resolve-DnsName " + psq(opt.ProbeName) + " -Type A"},
		{Comment: "The same, and the rest of the resolution, checked by the plugin.", Command: clientCheckCommand(t)},
	}
	ins.Remove = []Step{
		{
			Comment: "Remove every rule for the zone (also one added by hand without the comment).",
			Command: "Get-DnsClientNrptRule | Where-Object { $_.Namespace -contains " + suffix + " -or $_.Namespace -contains " + apex + " } | Remove-DnsClientNrptRule -Force",
		},
		{Comment: "Forget the zone's cached answers.", Command: "Clear-DnsClientCache"},
	}
	ins.Caveats = []string{
		"The rule is global: it applies on every network. Off-site the zone's servers cannot be reached, so names in " + t.Zone.String() + " stop resolving (the rest of the Internet works, which makes the symptom confusing) until the rule is removed.",
		"On a domain-joined machine, NRPT rules pushed by Group Policy take precedence: when the domain sets any, locally added rules are ignored. `Get-DnsClientNrptPolicy` shows what is in effect.",
		"Programs that do not use the Windows DNS Client (WSL distributions with their own resolv.conf, tools with a built-in resolver) do not see the rule.",
	}
}

// psq is one PowerShell string literal (PowerShell's own quoting rules).
func psq(s string) string { return remedy.PowerShellQuote(s) }
