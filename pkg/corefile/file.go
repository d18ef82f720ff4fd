package corefile

import (
	"fmt"
	"path"
	"strings"

	"github.com/miekg/dns"
)

// FileZone is a `file DBFILE [ZONES...]` entry: a zone served from a zone file, which
// CoreDNS reloads only when the SOA serial increases.
type FileZone struct {
	Line  int
	Path  string
	Zones []string
}

// FileZones returns the block's `file` entries (and `auto`, which has the same trap, with
// its directory as Path).
func (b *ServerBlock) FileZones() []FileZone {
	var out []FileZone
	for _, p := range b.Plugins {
		if p.Name != "file" && p.Name != "auto" {
			continue
		}
		fz := FileZone{Line: p.Line}
		args := p.Args
		if p.Name == "auto" {
			for _, l := range p.Block {
				if l.Name == "directory" && len(l.Args) > 0 {
					fz.Path = l.Args[0]
				}
			}
		} else if len(args) > 0 {
			fz.Path, args = args[0], args[1:]
		}
		for _, z := range args {
			fz.Zones = append(fz.Zones, NormalizeZone(z))
		}
		if len(fz.Zones) == 0 {
			fz.Zones = b.Zones()
		}
		out = append(out, fz)
	}
	return out
}

// parseZoneFile reads a zone file as plugin/file/file.go Parse does at start-up.
func parseZoneFile(origin, name, text string) error {
	zp := dns.NewZoneParser(strings.NewReader(text), dns.Fqdn(origin), name)
	seenSOA := false
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if _, isSOA := rr.(*dns.SOA); isSOA {
			seenSOA = true
		}
	}
	if zp.Err() != nil {
		return fmt.Errorf("failed to parse file %q for origin %s with error %v", name, origin, zp.Err())
	}
	if !seenSOA {
		return fmt.Errorf("file %q has no SOA record for origin %s", name, origin)
	}
	return nil
}

// ResolvePath is where CoreDNS reads a relative path of a plugin of block b: under the block's
// `root` directory when it has one (core/dnsserver config.Root), else in the process's working
// directory (the container's; / in the official image), not next to the Corefile.
func (c *Corefile) ResolvePath(b *ServerBlock, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	if r := b.PluginsNamed("root"); len(r) > 0 && len(r[0].Args) > 0 {
		return path.Join(r[0].Args[0], p)
	}
	wd := "/"
	if c.files != nil && c.files.WorkDir != "" {
		wd = c.files.WorkDir
	}
	return path.Join(wd, p)
}

// ZoneFileSerial returns the SOA serial of a zone file's text, reading the whole file as
// CoreDNS does: any record that does not parse is an error naming its line.
func ZoneFileSerial(origin, name, text string) (uint32, error) {
	zp := dns.NewZoneParser(strings.NewReader(text), dns.Fqdn(origin), name)
	var soa *dns.SOA
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if s, isSOA := rr.(*dns.SOA); isSOA && soa == nil {
			soa = s
		}
	}
	if err := zp.Err(); err != nil {
		return 0, err
	}
	if soa == nil {
		return 0, fmt.Errorf("%s: no SOA record", name)
	}
	return soa.Serial, nil
}
