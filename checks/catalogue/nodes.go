package catalogue

import "time"

// nodeListeners: doctor's reading of the nodes (package checks/nodes).
var nodeListeners = []Entry{
	{
		ID: "LA201", Title: "No process or pod on the nodes already holds the Service ports on the node addresses",
		Section: NodeListeners, Command: Doctor,
		Reads: reads(nodes, setupPods, trustedReaders, helperPods),
		// Helper pods may need an image pull before the read.
		Timeout: 4 * time.Minute,
		Codes: []Code{
			code("LA201", "POD-CLAIMS-PORT", "a pod claims one of the Service ports on the node by hostPort or hostNetwork"),
			code("LA201", "BACKEND-CLAIMS-PORT", "the pod that claims the port is one of the Service's own endpoints (information)"),
			code("LA201", "PROCESS-LISTENS", "a process listens on a Service port on the wildcard or the node address"),
			code("LA201", "BACKEND-LISTENS", "the process holding the port is the Service's own hostNetwork endpoint (information)"),
			code("LA201", "LOOPBACK-ONLY", "a socket on a Service port is bound to loopback only (information: not a conflict)"),
			code("LA201", "CLEAN", "nothing else listens on the Service ports of the node (information)"),
			code("LA201", "NO-NODE", "an address is carried by no node, so there is no node to read (information; LA101 reports it)"),
			code("LA201", "NOT-READ", "a node could not be read, beside a conflict found on another"),
			code("LA201", "HELPER-LEFT", "a helper pod could not be deleted after the read: the fix is the cleanup command of the run"),
		},
	},
	{
		ID: "LA202", Title: "What implements Services binds no node's peer addresses on the nodes (kube-proxy's mode)",
		Section: NodeListeners, Command: Doctor,
		Reads:   reads(nodes, system, dataplane, helperPods),
		Timeout: 4 * time.Minute,
		Codes: []Code{
			code("LA202", "IPVS-NODE-ADDRESSES", "kube-proxy runs in IPVS mode and the externalIPs are node addresses: every node holds its peers' addresses"),
			code("LA202", "PEER-ADDRESS-LOCAL", "a node holds a peer's address on kube-ipvs0: its traffic to that peer stays on it"),
			code("LA202", "MODE", "kube-proxy's mode and where it was read (information)"),
			code("LA202", "REPLACED", "a kube-proxy replacement (Cilium, Calico eBPF) implements Services (information)"),
			code("LA202", "MODE-UNKNOWN", "kube-proxy's mode cannot be read, or is not one kube-proxy runs on Linux"),
			code("LA202", "NOT-FOUND", "neither kube-proxy nor a replacement was found: what implements Services cannot be told"),
			code("LA202", "NODES-NOT-READ", "the nodes' kube-ipvs0 was not read: the verdict rests on the configuration (information)"),
			code("LA202", "UNMODELLED", "Calico runs its VPP dataplane, which implements Services itself: whether it binds externalIPs is not modelled"),
			code("LA202", "UNREAD", "part of the input could not be read (RBAC or an API failure): the check says what it did not see"),
		},
	},
	{
		ID: "LA203", Title: "The interfaces carrying the node addresses negotiated the same speed, full duplex",
		Section: NodeListeners, Command: Doctor,
		Reads:   reads(nodes, trustedReaders, helperPods),
		Timeout: 4 * time.Minute,
		Codes: []Code{
			code("LA203", "SLOW-LINK", "an interface carrying an address negotiated less than the fastest one"),
			code("LA203", "HALF-DUPLEX", "an interface carrying an address runs half duplex"),
			code("LA203", "NOT-COMPARED", "an interface's speed is not a negotiated one (virtual, -1) or was not read (information)"),
			code("LA203", "SUMMARY", "an interface's speed and duplex (information)"),
		},
	},
}
