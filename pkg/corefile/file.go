package corefile

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"testing/fstest"

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
			fz.Zones = append(fz.Zones, canonicalZone(z))
		}
		if len(fz.Zones) == 0 {
			fz.Zones = b.Zones()
		}
		out = append(out, fz)
	}
	return out
}

// maxZoneRecords bounds how many records a zone file may expand to before it is left unread:
// a ConfigMap holds at most 1 MiB, but each $GENERATE line expands to up to 65535 records
// (miekg/dns scan.go), so a hostile file could make the reader spin for minutes.
const maxZoneRecords = 200_000

// ErrZoneUnread is wrapped by the errors of a zone file that is not read to its end on
// purpose: an $INCLUDE of a path outside the pod's ConfigMap volumes (CoreDNS follows
// $INCLUDE on the pod's file system, plugin/file/file.go Parse calls SetIncludeAllowed(true);
// this reader follows it only into the files the API shows, never into this machine's), or
// more than maxZoneRecords records. What CoreDNS makes of such a file cannot be told.
var ErrZoneUnread = errors.New("zone file not read")

// podFS is the pod's file system as the API shows it, for miekg/dns's $INCLUDE: a file of a
// ConfigMap volume opens, a path under a known volume that holds no such key does not exist
// (CoreDNS then refuses the zone file), any other path is unknown.
type podFS struct {
	files  *Files
	opened *[]string
}

func (p podFS) Open(name string) (fs.File, error) {
	abs := "/" + name
	*p.opened = append(*p.opened, name)
	if f, ok := p.files.Read(abs); ok {
		return fstest.MapFS{name: &fstest.MapFile{Data: []byte(f.Content)}}.Open(name)
	}
	if p.files.Known(abs) {
		return nil, &fs.PathError{Op: "open", Path: abs, Err: syscall.ENOENT}
	}
	return nil, errUnknownPath{path: abs}
}

// eachZoneRecord reads a zone file as plugin/file/file.go Parse does (miekg/dns's ZoneParser
// with the file's origin and $INCLUDE allowed), calling each for every record, within the
// bounds above. The record cap is one budget for everything read through files (a file listed
// with 16 origins is parsed 16 times), and a parse that hit it is not run again; without files
// (nil) it bounds this parse alone.
func eachZoneRecord(files *Files, origin, name, text string, each func(dns.RR)) error {
	capped := fmt.Errorf("%s: %w: more than %d records (expanded $GENERATE ranges)", name, ErrZoneUnread, maxZoneRecords)
	key := name + "\x00" + dns.Fqdn(origin)
	budget, charged := maxZoneRecords, files != nil
	if files != nil {
		switch done, seen := files.zoneParsed[key]; {
		case seen && !done:
			return capped
		case seen: // read to its end before: within the cap again, not charged twice
			charged = false
		default:
			budget = max(maxZoneRecords-files.zoneRecords, 0)
		}
	}
	zp := dns.NewZoneParser(strings.NewReader(text), dns.Fqdn(origin), name)
	zp.SetIncludeAllowed(true)
	var opened []string
	zp.SetIncludeFS(podFS{files: files, opened: &opened})
	n := 0
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if n++; n > budget {
			files.noteZoneParse(key, n, false, charged)
			return capped
		}
		each(rr)
	}
	files.noteZoneParse(key, n, true, charged)
	err := zp.Err()
	if unknown, ok := errors.AsType[errUnknownPath](err); ok {
		return fmt.Errorf("%s: %w: it $INCLUDEs %s", name, ErrZoneUnread, unknown.Error())
	}
	if err != nil && len(opened) > 0 {
		// miekg/dns names an fs.FS path without its leading slash; CoreDNS opens the same
		// path on the file system and names it absolute: say it as CoreDNS does.
		msg := err.Error()
		for _, o := range opened {
			msg = strings.ReplaceAll(msg, "`"+o+"'", "`/"+o+"'")
			if strings.HasPrefix(msg, o+": dns:") {
				msg = "/" + msg
			}
		}
		return errors.New(msg)
	}
	return err
}

// noteZoneParse records one parse of a (file, origin) that read n records, to its end or not,
// charging the budget when charged.
func (f *Files) noteZoneParse(key string, n int, done, charged bool) {
	if f == nil {
		return
	}
	if charged {
		f.zoneRecords += n
	}
	if f.zoneParsed == nil {
		f.zoneParsed = map[string]bool{}
	}
	f.zoneParsed[key] = done
}

// parseZoneFile reads a zone file as plugin/file/file.go Parse does at start-up.
func parseZoneFile(files *Files, origin, name, text string) error {
	seenSOA := false
	err := eachZoneRecord(files, origin, name, text, func(rr dns.RR) {
		if _, isSOA := rr.(*dns.SOA); isSOA {
			seenSOA = true
		}
	})
	if errors.Is(err, ErrZoneUnread) {
		return err
	}
	if err != nil {
		return fmt.Errorf("failed to parse file %q for origin %s with error %v", name, origin, err)
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
// CoreDNS does (its $INCLUDEs through the pod's files): any record that does not parse is an
// error naming its line.
func ZoneFileSerial(files *Files, origin, name, text string) (uint32, error) {
	var soa *dns.SOA
	err := eachZoneRecord(files, origin, name, text, func(rr dns.RR) {
		if s, isSOA := rr.(*dns.SOA); isSOA && soa == nil {
			soa = s
		}
	})
	if err != nil {
		return 0, err
	}
	if soa == nil {
		return 0, fmt.Errorf("%s: no SOA record", name)
	}
	return soa.Serial, nil
}
