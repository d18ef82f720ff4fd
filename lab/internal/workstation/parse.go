package workstation

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// QueryAddrs reads the addresses `resolvectl query -t A NAME` printed ("NAME: 10.0.10.11
// -- link: eth0", one line per address), sorted.
func QueryAddrs(out string) []string {
	var addrs []string
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.Contains(line, "-- link:") {
			continue
		}
		for f := range strings.FieldsSeq(line) {
			if a, err := netip.ParseAddr(f); err == nil {
				addrs = append(addrs, a.String())
			}
		}
	}
	slices.Sort(addrs)
	return addrs
}

// ProfileOn reads `nmcli -t -f NAME,DEVICE,TYPE connection show --active` (terse: a colon
// inside a value is escaped with a backslash) and returns the profile active on device.
func ProfileOn(out, device string) (string, error) {
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var fields []string
		var cur strings.Builder
		for i := 0; i < len(line); i++ {
			switch {
			case line[i] == '\\' && i+1 < len(line):
				i++
				cur.WriteByte(line[i])
			case line[i] == ':':
				fields = append(fields, cur.String())
				cur.Reset()
			default:
				cur.WriteByte(line[i])
			}
		}
		fields = append(fields, cur.String())
		if len(fields) == 3 && fields[1] == device {
			return fields[0], nil
		}
	}
	return "", fmt.Errorf("no active profile on %s in %q", device, out)
}
