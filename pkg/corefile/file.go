package corefile

import (
	"fmt"
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
