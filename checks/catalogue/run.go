package catalogue

import "fmt"

// Run is the section of the result a command reports when its run could not start.
const Run Section = "Run"

// notStarted holds, per command, the result a run that could not start reports (the API
// unreachable, a bad kubeconfig or context, a named object missing): one ERROR naming the
// cause, so that a CI job always has a report to show why. It is no check: the runner never
// runs it, ForCommand and All leave it out, and it has no finding code. Its Reads are what the
// command reads before any check: doctor's discovery (the setup, and the routes the probe host
// is chosen from); client-check's (and client-config's) discovery of the zone's DNS Service.
var notStarted = []Entry{
	{ID: "LA000", Title: "The run could start (cluster reachable, configuration valid)", Section: Run, Command: Doctor,
		Reads: reads(discoveryCore, routes, namespaces)},
	{ID: "VPN000", Title: "The run could start (cluster reachable, configuration valid)", Section: Run, Command: VPNTraceCmd},
	{ID: "WS000", Title: "The run could start (cluster reachable, configuration valid)", Section: Run, Command: ClientCheck,
		Reads: discoveryCore},
}

// NotStarted is the entry of command's run that could not start. An unknown command is a
// programming error.
func NotStarted(command string) Entry {
	for _, e := range notStarted {
		if e.Command == command {
			e.Proves = provesOf(e.ID)
			return e
		}
	}
	panic(fmt.Sprintf("catalogue: no command %q", command))
}
