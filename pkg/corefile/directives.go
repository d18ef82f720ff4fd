package corefile

// IsStockDirective reports whether name is a plugin of a stock CoreDNS build (v1.14,
// core/dnsserver/zdirectives.go). CoreDNS refuses to start on any other directive; custom
// builds may add their own, so an unknown name is a Problem to show, not a parse failure.
func IsStockDirective(name string) bool {
	switch name {
	case "root", "metadata", "geoip", "cancel", "proxyproto", "quic", "grpc_server", "https", "https3",
		"timeouts", "multisocket", "reload", "nsid", "bufsize", "bind", "debug", "trace", "ready",
		"health", "pprof", "shed", "prometheus", "errors", "log", "dnstap", "local", "dns64", "any",
		"chaos", "loadbalance", "tsig", "rewrite", "autopath", "acl", "cache", "header", "dnssec",
		"tls", "minimal", "template", "transfer", "hosts", "route53", "azure", "clouddns",
		"k8s_external", "kubernetes", "file", "auto", "secondary", "etcd", "loop", "forward", "grpc",
		"erratic", "whoami", "on", "sign", "view", "nomad":
		return true
	}
	return false
}
