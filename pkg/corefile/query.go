package corefile

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

// ZoneBlockWithTemplateA returns the first block serving zone whose templates answer A
// queries (nil if none). With zone "", the block must be the only such block outside ".".
func (c *Corefile) ZoneBlockWithTemplateA(zone string) *ServerBlock {
	if zone == "" {
		blocks := c.TemplateABlocks()
		if len(blocks) == 1 {
			return blocks[0]
		}
		return nil
	}
	for _, b := range c.BlocksServing(zone, "") {
		if b.HasTemplateA() {
			return b
		}
	}
	return nil
}

// HasTemplateA reports whether the block has an entry meant for A queries (class IN or ANY,
// type A), whether or not an earlier catch-all entry shadows it.
func (b *ServerBlock) HasTemplateA() bool {
	for _, t := range b.Templates {
		if t.Matches("IN", "A") && !t.CatchAll() {
			return true
		}
	}
	return false
}

// TemplateABlocks returns the blocks, other than ".", that have a template entry for IN A:
// the candidates for the LAN zone.
func (c *Corefile) TemplateABlocks() []*ServerBlock {
	var out []*ServerBlock
	for i := range c.Blocks {
		b := &c.Blocks[i]
		if b.Serves(".", "") && len(b.Zones()) == 1 {
			continue
		}
		if b.HasTemplateA() {
			out = append(out, b)
		}
	}
	return out
}

// TemplateFor returns the entry CoreDNS uses first for a query of this class and type
// (entries are tried in order; regular expressions are not evaluated here).
func (b *ServerBlock) TemplateFor(class, qtype string) (Template, bool) {
	for _, t := range b.Templates {
		if t.Matches(class, qtype) {
			return t, true
		}
	}
	return Template{}, false
}

// AAnswers returns the answers of the entry that answers A queries in this block.
func (b *ServerBlock) AAnswers() []Answer {
	t, ok := b.TemplateFor("IN", "A")
	if !ok {
		return nil
	}
	return t.Answers
}

// ForwardsDot reports whether the block forwards every name (`forward . UPSTREAM...`).
func (b *ServerBlock) ForwardsDot() bool {
	for _, p := range b.PluginsNamed("forward") {
		if len(p.Args) >= 2 && NormalizeZone(p.Args[0]) == "." {
			return true
		}
	}
	return false
}

// Forwarders returns the upstreams of the block's `forward .` entry.
func (b *ServerBlock) Forwarders() []string {
	for _, p := range b.PluginsNamed("forward") {
		if len(p.Args) >= 2 && NormalizeZone(p.Args[0]) == "." {
			return append([]string(nil), p.Args[1:]...)
		}
	}
	return nil
}

// Ports lists every port a block listens on, in block order, without duplicates.
func (c *Corefile) Ports() []string {
	var out []string
	for i := range c.Blocks {
		for _, p := range c.Blocks[i].Ports() {
			if !contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
