package catalogue

// workstation: client-check's checks of this machine (package checks/workstation).
var workstation = []Entry{
	{
		ID: "WS001", Title: "A name in the zone resolves to the node addresses on this machine",
		Section: Workstation, Command: ClientCheck,
		Codes: []Code{
			code("WS001", "RESOLVES", "the zone's name resolves to the node addresses (information)"),
			code("WS001", "NOT-RESOLVED", "the zone's name does not resolve on this machine"),
			code("WS001", "OTHER-ADDRESSES", "the zone's name resolves to other addresses too (the public or VPN record)"),
			code("WS001", "MISSING-ADDRESSES", "the zone's name resolves without some node addresses (an older list)"),
		},
	},
	{
		ID: "WS002", Title: "Names outside the zone still resolve normally on this machine",
		Section: Workstation, Command: ClientCheck,
		Codes: []Code{
			code("WS002", "RESOLVES", "a name outside the zone resolves (information)"),
			code("WS002", "NOT-RESOLVED", "names outside the zone no longer resolve"),
			code("WS002", "HIJACKED", "a name outside the zone resolves to the node addresses: the zone's DNS answers every name"),
		},
	},
	{
		ID: "WS003", Title: "The zone's DNS servers answer this machine directly",
		Section: Workstation, Command: ClientCheck,
		Codes: []Code{
			code("WS003", "NO-ANSWER", "a zone server does not answer this machine"),
			code("WS003", "NOT-THE-ZONE", "a zone server answers an error: it does not serve the zone"),
			code("WS003", "WRONG-ANSWER", "a zone server answers other addresses"),
			code("WS003", "ANSWERS", "a zone server answers the node addresses (information)"),
			code("WS003", "REFUSES-OUTSIDE", "a zone server refuses names outside the zone (no '.' block): on Linux the link then leaves it"),
			code("WS003", "NONE-ANSWERS", "no server of the zone answers from here (off-site, a firewall, or the zone's DNS down)"),
		},
	},
	{
		ID: "WS004", Title: "systemd-resolved asks the zone's servers (Linux)",
		Section: Workstation, Command: ClientCheck,
		Codes: []Code{
			code("WS004", "NO-CURRENT-SERVER", "the link lists the zone's servers but has no current server"),
			code("WS004", "OTHER-SERVER", "the link asks another server than the zone's"),
			code("WS004", "CURRENT-SERVER", "the link asks one of the zone's servers (information)"),
			code("WS004", "OTHER-LINK-CLAIMS", "another link's routing domain matches the zone better"),
			code("WS004", "OTHER-LINK-TIES", "another link matches the zone as well"),
			code("WS004", "NO-ROUTING-DOMAIN", "the link has no routing domain for the zone (information)"),
			code("WS004", "ANSWERED-ELSEWHERE", "not configured, yet the zone resolves: something else answers it (information)"),
			code("WS004", "NOT-CONFIGURED", "this machine is not set up to send the zone to its servers"),
			code("WS004", "RESOLV-CONF-FIRST", "without systemd-resolved, a zone server comes first in resolv.conf (information)"),
			code("WS004", "RESOLV-CONF-ORDER", "without systemd-resolved, another nameserver comes before the zone's"),
		},
	},
}
