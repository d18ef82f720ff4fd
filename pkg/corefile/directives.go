package corefile

import "slices"

// Directives are the plugins of a stock CoreDNS v1.14.7 build in the order CoreDNS sets them
// up and chains them (core/dnsserver/zdirectives.go, generated from plugin.cfg): a query goes
// through a block's plugins in this order, whatever the order they are written in.
var Directives = []string{
	"root", "metadata", "geoip", "cancel", "proxyproto", "quic", "grpc_server", "https", "https3",
	"timeouts", "multisocket", "reload", "nsid", "bufsize", "bind", "debug", "trace", "ready",
	"health", "pprof", "shed", "prometheus", "errors", "log", "dnstap", "local", "dns64", "any",
	"chaos", "loadbalance", "tsig", "rewrite", "autopath", "acl", "cache", "header", "dnssec",
	"tls", "minimal", "template", "transfer", "hosts", "route53", "azure", "clouddns",
	"k8s_external", "kubernetes", "file", "auto", "secondary", "etcd", "loop", "forward", "grpc",
	"erratic", "whoami", "on", "sign", "view", "nomad",
}

// IsStockDirective reports whether name is a plugin of a stock CoreDNS build. caddy's parser
// refuses any other directive ("Unknown directive"), so a stock CoreDNS does not start.
func IsStockDirective(name string) bool { return slices.Contains(Directives, name) }

// directiveRank is a plugin's place in the chain.
func directiveRank(name string) int { return slices.Index(Directives, name) }
