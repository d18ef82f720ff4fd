package catalogue

import "time"

// ladder are the codes of a hop ladder (VPN006 from the pod, VPN007 from this machine).
func ladder(id string) []Code {
	return []Code{
		code(id, "HOP", "a hop answered (information: the method and the answer)"),
		code(id, "FIRST-SILENT-HOP", "the first silent hop, which names the broken layer"),
		code(id, "SILENT-HOP", "a later hop, or a pod-side hop, did not answer"),
		code(id, "UNMEASURED", "a hop could not be measured (no tool, no permission): nothing is concluded from it"),
		code(id, "MTU-BLACK-HOLE", "a hop answers small packets but Don't-Fragment packets above a size vanish: a tunnel MTU black hole (the largest size that passes is named)"),
	}
}

// vpnTrace: vpn-trace's checks (package checks/vpn).
var vpnTrace = []Entry{
	{
		ID: "VPN001", Title: "OpenVPN pods are found (every replica is traced)",
		Section: VPNTrace, Command: VPNTraceCmd,
		Reads: reads(vpnPods),
		Codes: []Code{
			code("VPN001", "TRACED", "a VPN pod that is traced (information)"),
			code("VPN001", "NOT-RUNNING", "a VPN pod that is not running is not traced"),
		},
	},
	{
		ID: "VPN002", Title: "IP forwarding is on inside every VPN pod",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"},
		Reads: reads(vpnExec),
		Codes: []Code{
			code("VPN002", "OFF", "net.ipv4.ip_forward = 0 in the pod: only the tunnel peer answers"),
			code("VPN002", "ON", "net.ipv4.ip_forward = 1 (information)"),
			code("VPN002", "NO-TOOL", "the image has no tool to read the sysctl: an ephemeral debug container can"),
		},
	},
	{
		ID: "VPN003", Title: "Forwarding is set by the manifest, so it survives restarts and new replicas",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"},
		Reads: reads(vpnExec, owner, durability, proveFixes, cni, nodeReads),
		Codes: []Code{
			code("VPN003", "FIX-BROKEN", "the manifest's way of setting forwarding cannot work here (admission, allowlist, privileges)"),
			code("VPN003", "SYSCTL-FORBIDDEN", "the kubelet refused a sysctl in this namespace"),
			code("VPN003", "SET-LIVE-UNREAD", "the manifest sets forwarding; the live value could not be read (information)"),
			code("VPN003", "NOT-IN-MANIFEST", "nothing in the manifest sets ip_forward"),
			code("VPN003", "SET-BY-MANIFEST", "ip_forward = 1 and the manifest sets it (information)"),
			code("VPN003", "SET-BY-CNI", "ip_forward = 1, written into every new pod by the CNI (information)"),
			code("VPN003", "SET-BY-NODE", "ip_forward = 1, inherited by every new pod from the node (information)"),
			code("VPN003", "HAND-FIX", "ip_forward = 1, but a new pod starts with 0: a hand fix, lost with the next pod"),
			code("VPN003", "UNEXPLAINED-ONE", "ip_forward = 1 that the manifest does not set, and the node or CNI could not be read to tell whether a new pod gets it"),
			code("VPN003", "DID-NOT-TAKE", "the manifest means to set forwarding yet the pod reads 0"),
			code("VPN003", "OFF-NOT-IN-MANIFEST", "ip_forward = 0 and nothing in the manifest sets it"),
			code("VPN003", "ORIGIN-CNI", "the pod's 0 is written by the CNI (information: the CNI-level fix)"),
			code("VPN003", "ORIGIN-NODE", "the pod's 0 is inherited from the node or the kernel's defaults (information)"),
			code("VPN003", "ORIGIN-UNKNOWN", "where the pod's 0 comes from could not be told (information: what was not read)"),
			code("VPN003", "CNI-DRIFT", "a node's CNI configuration and Calico's cluster setting disagree: the next calico-node start rewrites the node's"),
		},
	},
	{
		ID: "VPN004", Title: "The tunnel interface is up and the client pool is known",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"},
		Reads: reads(vpnExec, targets),
		Codes: []Code{
			code("VPN004", "NO-TUNNEL", "no tun or tap interface in the pod"),
			code("VPN004", "TUNNEL", "the tunnel and the client pool (information)"),
			code("VPN004", "POOL-UNKNOWN", "the client pool could not be told"),
			code("VPN004", "PUSHED-DNS", "the DNS the server pushes to clients (information)"),
			code("VPN004", "NO-PUSHED-DNS", "the server pushes no DNS server (information)"),
			code("VPN004", "PUSHED-ROUTES", "the server pushes routes that cover the pod and the Service VIP (information)"),
			code("VPN004", "NO-PUSHED-ROUTE", "the server pushes no route to the pod or Service ranges: clients keep those packets out of the tunnel"),
		},
	},
	{
		ID: "VPN005", Title: "Replies find their way back: the client pool is masqueraded, and policies match what they see",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"},
		Reads: reads(vpnExec, owner, policies, nodeReads, targets),
		Codes: []Code{
			code("VPN005", "NAT-UNKNOWN", "whether the pool is masqueraded is unknown"),
			code("VPN005", "MASQUERADED", "the pool is source-translated on its way out (information)"),
			code("VPN005", "MASQUERADE-SCOPE", "the masquerade rules do not match the pool's packets to the ladder's pod or VIP (an out-interface or destination that excludes them)"),
			code("VPN005", "MASQUERADE-SCOPE-UNKNOWN", "the masquerade is limited to an out-interface and the pod's uplink was not read"),
			code("VPN005", "ROUTED-BACK", "the pool is not masqueraded, but the cluster routes it back: the nodes' routes (BGP) or a pod answering through the tunnel (information)"),
			code("VPN005", "NO-MASQUERADE", "no masquerade for the client pool: replies go nowhere"),
			code("VPN005", "POLICY-MISMATCH", "a NetworkPolicy stops matching once the pool is masqueraded"),
			code("VPN005", "EGRESS-DENIED", "NetworkPolicies isolate the VPN pod's egress and admit nothing to the pods: the forwarded packets are dropped"),
			code("VPN005", "CNI-POLICIES", "Calico or Cilium policies select the VPN pod or the ladder's pod (named, not evaluated)"),
			code("VPN005", "POLICIES-UNREAD", "policy kinds that were not checked (information: which, and why)"),
		},
	},
	{
		ID: "VPN006", Title: "From inside the VPN pod: peer, a pod IP, the cluster DNS VIP, names, a public address",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"}, Timeout: 2 * time.Minute,
		Reads: reads(vpnExec, targets),
		Codes: ladder("VPN006"),
	},
	{
		ID: "VPN007", Title: "From this machine through the tunnel: server, a pod IP, the cluster DNS VIP, names, a public address",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"}, Timeout: 2 * time.Minute,
		Reads: reads(vpnExec, targets),
		Codes: append(ladder("VPN007"),
			code("VPN007", "NOT-THROUGH-TUNNEL", "this machine does not send a hop's address into the tunnel: its answer does not test the VPN")),
	},
	{
		ID: "VPN008", Title: "Verdict: the broken layer and the change that fixes it",
		Section: VPNTrace, Command: VPNTraceCmd, DependsOn: []string{"VPN001"}, Timeout: 3 * time.Minute,
		Reads: reads(vpnExec, owner, durability, cni, policies, nodeReads, targets),
		Codes: []Code{
			code("VPN008", "FORWARDING-OFF", "verdict: forwarding is off in the pod"),
			code("VPN008", "TUNNEL", "verdict: the tunnel is not up"),
			code("VPN008", "MTU", "verdict: every hop answers, but large packets vanish in the tunnel (an MTU black hole)"),
			code("VPN008", "ROUTES", "verdict: clients do not route the pod or Service ranges into the tunnel (the server pushes no route)"),
			code("VPN008", "RETURN-PATH", "verdict: replies have no way back (masquerade)"),
			code("VPN008", "DNS-PLUMBING", "verdict: forwarding works; clients are not given the cluster DNS"),
			code("VPN008", "POLICY", "verdict: a NetworkPolicy drops the clients' traffic"),
			code("VPN008", "POLICY-OR-CNI", "verdict: the pod forwards but the traffic dies in the pod network (policy or CNI)"),
			code("VPN008", "EGRESS", "verdict: the cluster reaches no public address"),
			code("VPN008", "DURABILITY", "verdict: it works now, but the fix is not in the manifest"),
			code("VPN008", "SILENT-HOP", "verdict: a hop is silent for a reason the facts do not name"),
			code("VPN008", "WORKS", "verdict: every layer works (information)"),
		},
	},
}
