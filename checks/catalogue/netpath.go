package catalogue

// netUnreachable are the codes of an address that does not answer a probe.
func netUnreachable(id string) []Code {
	return []Code{
		code(id, "NO-ANSWER", "an address gave no answer within the timeout"),
		code(id, "REFUSED", "an address refused the connection: the host is up but nothing takes the port"),
		code(id, "PROBE-ERROR", "the probe failed otherwise (the error is in the evidence)"),
	}
}

// dnsPath: doctor's DNS questions to every address (package checks/netpath).
var dnsPath = []Entry{
	{
		ID: "LA301", Title: "DNS answers A for the zone with the node addresses, on every address, over UDP and TCP",
		Section: DNSPath, Command: Doctor,
		Codes: append(netUnreachable("LA301"),
			code("LA301", "WRONG-ANSWER", "an address does not answer the DNS Service's externalIPs"),
			code("LA301", "NOT-AUTHORITATIVE", "an answer comes without the AA flag: from a cache or a forwarder, not the zone's template"),
			code("LA301", "LONG-TTL", "answers carry a TTL over an hour"),
			code("LA301", "DISAGREE", "the addresses give different answers for the same name"),
			code("LA301", "SUMMARY", "what each address answered (information)"),
		),
	},
	{
		ID: "LA302", Title: "DNS answers AAAA in the zone with NODATA (never NXDOMAIN, SERVFAIL or a public AAAA)",
		Section: DNSPath, Command: Doctor,
		Codes: append(netUnreachable("LA302"),
			code("LA302", "AAAA-ANSWER", "the zone answers AAAA with an address"),
			code("LA302", "NXDOMAIN", "the zone answers AAAA with NXDOMAIN: caches may drop the whole name"),
			code("LA302", "RCODE", "the zone answers AAAA with SERVFAIL or another error"),
			code("LA302", "SUMMARY", "what each address answered (information)"),
		),
	},
	{
		ID: "LA303", Title: "DNS resolves names outside the zone (forwarding); the resolver is open to the LAN",
		Section: DNSPath, Command: Doctor,
		Codes: append(netUnreachable("LA303"),
			code("LA303", "UPSTREAM-SILENT", "the address answers the zone but the forwarded name gets no answer in time: the '.' block's upstream fails"),
			code("LA303", "NODATA", "the outside name resolves to no address: it proves nothing (pass --outside-name)"),
			code("LA303", "NAME-REFUSED", "the server refuses names outside the zone (no `.` block)"),
			code("LA303", "NXDOMAIN", "the forwarder says the outside name does not exist"),
			code("LA303", "UPSTREAM-FAILED", "the `.` block's upstream fails (SERVFAIL or another error)"),
			code("LA303", "OPEN-RESOLVER", "the addresses are recursive resolvers open to the LAN (information)"),
		),
	},
	{
		ID: "LA304", Title: "DNS does not resolve cluster-internal names for the LAN",
		Section: DNSPath, Command: Doctor,
		Codes: append(netUnreachable("LA304"),
			code("LA304", "LEAK", "a cluster-internal name resolves for the LAN"),
			code("LA304", "SUMMARY", "what each address answered (information)"),
		),
	},
}

// httpsPath: doctor's HTTPS requests to every address (package checks/netpath).
var httpsPath = []Entry{
	{
		ID: "LA401", Title: "HTTPS on every proxy address answers the probe host with the expected status and a valid certificate",
		Section: HTTPSPath, Command: Doctor,
		Codes: append(netUnreachable("LA401"),
			code("LA401", "DEFAULT-CERT", "Traefik's default certificate: no certificate it holds covers the host"),
			code("LA401", "CERT-HOST", "the certificate does not cover the host"),
			code("LA401", "CERT-EXPIRED", "the certificate is not valid now"),
			code("LA401", "CERT-UNTRUSTED", "the certificate is not trusted by this machine"),
			code("LA401", "CERT-UNTRUSTED-ACCEPTED", "an untrusted certificate accepted because of --insecure (information)"),
			code("LA401", "CERT-EXPIRING", "the certificate expires within 14 days"),
			code("LA401", "REDIRECT-LOOP", "the host redirects to itself"),
			code("LA401", "STATUS", "the status is not the expected one"),
			code("LA401", "LOCATION", "the redirect does not go where --expect-location says"),
			code("LA401", "LOCATION-INTERNAL", "the redirect goes to a name only the cluster's DNS answers (NAME.NAMESPACE.svc..., the cluster domain, a single label, a Service's NAME.NAMESPACE): no LAN browser can follow it; often the forwardAuth address, which Traefik resolves the auth server's path against (the fix: preserveLocationHeader, or the auth server's public URL, which doctor cannot prove)"),
			code("LA401", "RETURN-INTERNAL", "the redirect's return URL (redirect_uri=, rd=) is on a name only the cluster's DNS answers: the browser cannot come back after sign-in (the fix is the auth server's, which doctor cannot prove)"),
			code("LA401", "LOCATION-UNEXPECTED", "the redirect goes to none of the hosts the route's forwardAuth names (warning: an identity provider may be named nowhere in the cluster)"),
			code("LA401", "CERTS-DIFFER", "the addresses serve different certificates"),
			code("LA401", "SUMMARY", "what each address answered (information)"),
		),
	},
	{
		ID: "LA402", Title: "HTTPS: the LAN path and the system resolver's path serve the same certificate and answer",
		Section: HTTPSPath, Command: Doctor,
		Codes: []Code{
			code("LA402", "NO-SECOND-PATH", "there is no second path to compare from this machine: the check is SKIP with the reason (nothing was compared), the finding keeps the evidence"),
			code("LA402", "CERT-DIFFERS", "the two paths serve different certificates"),
			code("LA402", "ANSWER-DIFFERS", "the two paths answer differently"),
			code("LA402", "SAME", "both paths serve the same certificate and answer (information)"),
		},
	},
	{
		ID: "LA403", Title: "HTTPS: no node address is much slower than the others (handshake, first byte)",
		Section: HTTPSPath, Command: Doctor,
		Codes: []Code{
			code("LA403", "SLOW", "an address is much slower than the others"),
			code("LA403", "NOT-COMPARED", "fewer than two addresses could be sampled (information)"),
			code("LA403", "SUMMARY", "the samples of each address (information)"),
		},
	},
}
