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

// directiveSince is the first stock tag whose plugin.cfg lists each directive added after v1.6.0
// (coredns/coredns plugin.cfg read at every tag v1.6.0..v1.14.7; docs/semantics.md 6.2). The
// others of Directives are in v1.6.0's plugin.cfg.
var directiveSince = map[string][3]int{
	"azure": {1, 6, 2}, "clouddns": {1, 6, 3}, "sign": {1, 6, 3}, "acl": {1, 6, 4}, "transfer": {1, 6, 5},
	"bufsize": {1, 6, 6}, "dns64": {1, 7, 0}, "local": {1, 8, 1}, "minimal": {1, 8, 4}, "geoip": {1, 8, 5},
	"header": {1, 8, 5}, "tsig": {1, 9, 4}, "view": {1, 10, 0}, "timeouts": {1, 10, 1}, "multisocket": {1, 12, 0},
	"quic": {1, 12, 2}, "nomad": {1, 13, 0}, "grpc_server": {1, 14, 0}, "https": {1, 14, 0}, "https3": {1, 14, 0},
	"proxyproto": {1, 14, 3}, "shed": {1, 14, 7},
}

// federationUntil: v1.7.0 removed the federation plugin, which v1.6.x lists.
var federationUntil = [3]int{1, 7, 0}

// KnowsDirective reports whether the build b has the directive name: a stock build knows its
// version's plugin.cfg; known is false for a build that is not stock (its own plugins cannot be
// told from its image).
func (b Build) KnowsDirective(name string) (has, known bool) {
	if name == "k8s_gateway" && b.Gateway {
		return true, true
	}
	if !b.Known() {
		return IsStockDirective(name), IsStockDirective(name)
	}
	if name == "federation" {
		return b.Image != "" && !b.AtLeast(federationUntil[0], federationUntil[1], federationUntil[2]), true
	}
	if !IsStockDirective(name) {
		return false, true
	}
	if v, ok := directiveSince[name]; ok {
		return b.AtLeast(v[0], v[1], v[2]), true
	}
	return true, true
}

// directiveRank is a plugin's place in the chain.
func directiveRank(name string) int {
	if name == "k8s_gateway" {
		// k8s_gateway's build puts it in the kubernetes slot (ori-edge/k8s_gateway cmd/coredns.go)
		name = "kubernetes"
	}
	return slices.Index(Directives, name)
}
