package corefile

import "strings"

// BlocksServing returns the blocks with a key for zone (any port when port is "").
func (c *Corefile) BlocksServing(zone, port string) []*ServerBlock {
	var out []*ServerBlock
	for i := range c.Blocks {
		if c.Blocks[i].Serves(zone, port) {
			out = append(out, &c.Blocks[i])
		}
	}
	return out
}

// TemplateFor returns the first entry of the block tried for a query of this class and type
// (whatever its zones and match expressions: Query tells what answers a given name).
func (b *ServerBlock) TemplateFor(class, qtype string) (Template, bool) {
	for _, t := range b.Templates {
		if t.Matches(class, qtype) {
			return t, true
		}
	}
	return Template{}, false
}

// Forwarders returns the upstreams of the block's `forward .` entry.
func (b *ServerBlock) Forwarders() []string {
	for _, f := range b.forwards {
		if f.from == "." {
			return append([]string(nil), f.to...)
		}
	}
	return nil
}

// ForwardsDot reports whether the block forwards every name (`forward . UPSTREAM...`).
func (b *ServerBlock) ForwardsDot() bool { return len(b.Forwarders()) > 0 }

// Files is the pod's filesystem the Corefile was loaded from (nil when parsed alone).
func (c *Corefile) Files() *Files { return c.files }

// TemplateAZones are the zones a `template IN A` (or `template ANY A`) entry answers, in any
// server block: a block's own zones when the entry names none, the entry's zones otherwise (the
// template README's pattern serves a zone from the "." block). "." and reverse zones are left
// out: they are not a LAN zone.
func (c *Corefile) TemplateAZones() []string {
	var out []string
	for i := range c.Blocks {
		for _, t := range c.Blocks[i].Templates {
			if !t.Valid || t.Type != "A" || (t.Class != "IN" && t.Class != "ANY") {
				continue
			}
			for _, z := range t.Zones {
				if z != "." && !strings.HasSuffix(z, ".arpa.") && !contains(out, z) {
					out = append(out, z)
				}
			}
		}
	}
	return out
}
