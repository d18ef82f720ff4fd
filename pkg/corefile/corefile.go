// Package corefile is a read-only model of a CoreDNS Corefile, built on the parser CoreDNS
// itself uses (github.com/coredns/caddy/caddyfile): server blocks with their zones and ports,
// plugins with their arguments and nested lines, and the template plugin's answers.
//
// The model never reads the local filesystem or environment: a Corefile comes from a
// ConfigMap in the cluster, so its `import` of files and its {$ENV} placeholders refer to the
// pod, not to the machine running doctor. File imports are recorded (Corefile.Imports) and
// left out; placeholders are kept verbatim.
package corefile

import (
	"fmt"
	"strings"
)

// Corefile is one parsed Corefile.
type Corefile struct {
	// Name says where the text came from (e.g. "ConfigMap lan-dns/lan-dns, key Corefile").
	Name   string
	Blocks []ServerBlock
	// Imports are file imports the pod would read and this model cannot see.
	Imports []Import
	// Problems are things CoreDNS would reject or misread (an invalid zone key, an unknown
	// template class, an answer that is not a resource record), each at its line.
	Problems []Problem
}

// ServerBlock is one `zone:port { ... }` block.
type ServerBlock struct {
	// Line is where the block's first key is written.
	Line      int
	Keys      []string
	Addresses []Address
	// Plugins in the order they are written (CoreDNS runs them in plugin.cfg order, which
	// only matters between different plugins).
	Plugins []Plugin
	// Templates are the block's template plugin entries, in the order CoreDNS tries them.
	Templates []Template
}

// Address is one server block key, normalised as CoreDNS does.
type Address struct {
	Raw string
	// Transport is dns, tls, grpc, https, https3, quic or unix.
	Transport string
	// Zone is lower-case and fully qualified ("apps.example.com.", ".").
	Zone string
	// Port defaults per transport (53 for dns).
	Port string
}

// Plugin is one directive of a server block, with its arguments and the lines of its block.
// Nested blocks deeper than one level are flattened, as CoreDNS plugins read them.
type Plugin struct {
	Name  string
	Line  int
	Args  []string
	Block []Line
}

// Line is one line inside a plugin's block, e.g. `answer "..."` in a template.
type Line struct {
	Name string
	Line int
	Args []string
}

// Import is an `import` of a file or glob that the model did not follow.
type Import struct {
	Line    int
	Pattern string
}

// Problem is a finding about the Corefile's content at a given line.
type Problem struct {
	Line    int
	Message string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Message) }

// ParseError is a syntax error CoreDNS would refuse to start with.
type ParseError struct {
	Name string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Msg)
}

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

// HasReload reports whether the block reloads the Corefile when the ConfigMap changes.
func (b *ServerBlock) HasReload() bool { return b.Has("reload") }

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
	zone = NormalizeZone(zone)
	for _, a := range b.Addresses {
		if a.Zone == zone && (port == "" || a.Port == port) {
			return true
		}
	}
	return false
}

// Label is how findings name the block: its keys and line.
func (b *ServerBlock) Label() string {
	return fmt.Sprintf("server block %s (line %d)", strings.Join(b.Keys, " "), b.Line)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
