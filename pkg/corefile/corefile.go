// Package corefile is a model of a CoreDNS Corefile as CoreDNS v1.14.7 reads and serves it:
// the file given with -conf, its imports expanded from the pod's files (Files, built from the
// pod spec: never the local disk), its server blocks grouped by caddy's rules, every plugin
// argument CoreDNS checks at start-up (Problems: what makes it refuse to start), and a query
// model (Query) that says which server block and plugin answer a name and type on a port, with
// which records, NODATA, or by forwarding. Each rule cites the CoreDNS or caddy source it
// follows; the tests compare it with the real binary.
//
// Whatever the API cannot show (a file outside the pod's ConfigMap volumes, an environment
// variable with no literal value, a plugin doctor does not model) is reported as unknown,
// never guessed.
package corefile

import (
	"fmt"
	"slices"
	"strings"
)

// Corefile is one parsed Corefile, imports expanded.
type Corefile struct {
	// Name says where the text came from (e.g. "ConfigMap lan-dns/lan-dns key Corefile").
	Name string
	// Conf is the path CoreDNS reads it from (-conf), as written in the pod spec.
	Conf   string
	Blocks []ServerBlock
	// Imports are the imports CoreDNS expands at start-up, in the order it does.
	Imports []Import
	// Problems are what CoreDNS refuses to start with (a bad server block key, a plugin
	// argument out of its limits, a zone defined twice), in the order CoreDNS checks them: the
	// first is the error the pod logs.
	Problems []Problem
	// Warnings are what CoreDNS accepts but logs or silently ignores (an import glob matching
	// nothing, a template zone that is not a domain name).
	Warnings []Problem
	// Incomplete says why part of the configuration is not known (an import of a path the
	// API does not show): predictions that depend on it are unknown.
	Incomplete []string
	// Unchecked are plugins whose arguments this model does not check against CoreDNS's rules.
	Unchecked []string
	files     *Files
}

// ServerBlock is one `zone:port { ... }` block.
type ServerBlock struct {
	// File is the pod path of the file the block's keys are written in ("" for the Corefile
	// itself); Line is where its first key is.
	File string
	Line int
	// EndLine is the line of the block's closing brace (0 when it has none).
	EndLine   int
	Keys      []string
	Addresses []Address
	// Plugins in the order they are written (CoreDNS runs them in plugin.cfg order, which
	// only matters between different plugins).
	Plugins []Plugin
	// Templates are the block's template plugin entries, in the order CoreDNS tries them.
	Templates []Template
	// Listen are the addresses the block binds (the bind plugin); empty means every address.
	Listen []string
	// raw keeps the tokens the plugins are read from; the rest is what the query model needs
	// from the plugins' setup.
	raw         rawBlock
	forwards    []forwardStanza
	hosts       *hostsConf
	zonePlugins []zonePlugin
	cacheCap    uint32
	cacheZones  []string
}

// Address is one server block key, normalised as CoreDNS does (core/dnsserver/register.go
// InspectServerBlocks).
type Address struct {
	Raw string
	// Transport is dns, tls, grpc, https, https3, quic or unix.
	Transport string
	// Zone is lower-case and fully qualified ("apps.example.com.", ".").
	Zone string
	// Port defaults per transport (53 for dns); a placeholder ({$PORT}) when it comes from an
	// environment variable the pod spec does not give.
	Port string
}

// Plugin is one directive of a server block, with its arguments and the lines of its block.
type Plugin struct {
	Name string
	// File is the pod path of the file the directive is written in ("" for the Corefile).
	File string
	Line int
	// EndLine is the line of the entry's last token (its closing brace when it has a block).
	EndLine int
	Args    []string
	Block   []Line
}

// Line is one line inside a plugin's block, e.g. `answer "..."` in a template.
type Line struct {
	Name string
	Line int
	Args []string
}

// Problem is something CoreDNS refuses (or, in Warnings, accepts with a log line) at a place
// of the configuration.
type Problem struct {
	// File is the pod path ("" for the Corefile itself), Line the line (0 when none).
	File    string
	Line    int
	Message string
}

func (p Problem) String() string {
	where := ""
	if p.File != "" {
		where = p.File + " "
	}
	if p.Line > 0 {
		where += fmt.Sprintf("line %d", p.Line)
	}
	if where == "" {
		return p.Message
	}
	return strings.TrimSpace(where) + ": " + p.Message
}

// Starts reports whether CoreDNS starts with this configuration, as far as the model can tell
// (Incomplete and Unchecked say what it could not).
func (c *Corefile) Starts() bool { return len(c.Problems) == 0 }

// PluginsNamed returns the entries of the named plugin in this block.
func (b *ServerBlock) PluginsNamed(name string) []Plugin {
	var out []Plugin
	for _, p := range b.Plugins {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// Has reports whether the block uses the named plugin.
func (b *ServerBlock) Has(name string) bool { return len(b.PluginsNamed(name)) > 0 }

// HasReload reports whether the block itself has `reload`. Reload is process-wide: see
// Corefile.Reloads.
func (b *ServerBlock) HasReload() bool { return b.Has("reload") }

// Reloads reports whether CoreDNS reloads this Corefile when it changes: the reload plugin
// keeps one package-level state for the whole process (plugin/reload/setup.go `r`), so one
// block with `reload` reloads every block, imported files included (the hook hashes the
// output of caddyfile.Parse, imports expanded: plugin/reload/reload.go).
func (c *Corefile) Reloads() bool {
	for i := range c.Blocks {
		if c.Blocks[i].HasReload() {
			return true
		}
	}
	return false
}

// Zones lists the block's zones, in key order, without duplicates.
func (b *ServerBlock) Zones() []string {
	var out []string
	for _, a := range b.Addresses {
		if !contains(out, a.Zone) {
			out = append(out, a.Zone)
		}
	}
	return out
}

// Ports lists the block's ports, in key order, without duplicates.
func (b *ServerBlock) Ports() []string {
	var out []string
	for _, a := range b.Addresses {
		if !contains(out, a.Port) {
			out = append(out, a.Port)
		}
	}
	return out
}

// Serves reports whether one of the block's keys is exactly zone (any port when port is "").
func (b *ServerBlock) Serves(zone, port string) bool {
	zone = canonicalZone(zone)
	for _, a := range b.Addresses {
		if a.Zone == zone && (port == "" || a.Port == port) {
			return true
		}
	}
	return false
}

// Label is how findings name the block: its keys, file and line.
func (b *ServerBlock) Label() string {
	where := fmt.Sprintf("line %d", b.Line)
	if b.File != "" {
		where = fmt.Sprintf("%s line %d", b.File, b.Line)
	}
	return fmt.Sprintf("server block %s (%s)", strings.Join(b.Keys, " "), where)
}

// Where names a plugin's place: "line 7" or "/etc/coredns/custom/lan.server line 3".
func (p Plugin) Where() string {
	if p.File != "" {
		return fmt.Sprintf("%s line %d", p.File, p.Line)
	}
	return fmt.Sprintf("line %d", p.Line)
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
