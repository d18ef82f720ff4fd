package procnet

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzSplitDump: whatever a node prints, a dump that SplitDump accepts accounts for each of the
// four tables exactly once, and no table holds one of the command's marker lines.
func FuzzSplitDump(f *testing.F) {
	var whole bytes.Buffer
	for _, tb := range Tables() {
		whole.WriteString(tableMarker + string(tb) + "\n")
		whole.Write(recorded(f, tb))
		whole.WriteString("\n")
	}
	f.Add(whole.Bytes())
	f.Add([]byte("@@lanaccess-table tcp\n@@lanaccess-table tcp6\n@@lanaccess-missing tcp6\n@@lanaccess-table udp\n@@lanaccess-table udp6\n@@lanaccess-missing udp6\n"))
	f.Add([]byte("@@lanaccess-table tcp\n@@lanaccess-table tcp\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		d, err := SplitDump(out)
		if err != nil {
			return
		}
		if len(d.Tables)+len(d.Missing) != len(Tables()) {
			t.Fatalf("%d tables and %d missing from %q", len(d.Tables), len(d.Missing), out)
		}
		for _, tb := range Tables() {
			_, read := d.Tables[tb]
			missing := false
			for _, m := range d.Missing {
				missing = missing || m == tb
			}
			if read == missing {
				t.Fatalf("table %s read=%v missing=%v from %q", tb, read, missing, out)
			}
		}
		for tb, data := range d.Tables {
			for line := range strings.SplitSeq(string(data), "\n") {
				if strings.HasPrefix(line, tableMarker) || strings.HasPrefix(line, missingMarker) {
					t.Fatalf("table %s holds the marker line %q", tb, line)
				}
			}
		}
	})
}

// FuzzParseOwners: the owners ParseOwners returns are real process ids, each once per socket
// and in order, and a scan without its end marker is never a success.
func FuzzParseOwners(f *testing.F) {
	f.Add([]byte("@@denied\n@@owner 45810 812 nginx :: nginx: master process /usr/sbin/nginx \n@@owner 45810 813 nginx :: nginx: worker process \n@@done\n"))
	f.Add([]byte("@@owner 1 2\n@@owner 1 2 x\n@@owner x 2 y :: z\n@@owner 18446744073709551615 -1 y :: z\n@@done"))
	f.Fuzz(func(t *testing.T, out []byte) {
		o, err := ParseOwners(out)
		if err == nil && !strings.Contains("\n"+string(out)+"\n", "\n@@done\n") {
			t.Fatalf("no end marker but no error, from %q", out)
		}
		for ino, owners := range o.ByInode {
			for i, ow := range owners {
				if ow.PID < 0 || (i > 0 && owners[i-1].PID >= ow.PID) {
					t.Fatalf("inode %d: owners %+v not distinct, ordered and valid, from %q", ino, owners, out)
				}
			}
		}
	})
}
