package workstation

import (
	"bufio"
	"bytes"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// ResolvedLink is the DNS state of one link (or of the global section) as `resolvectl status`
// prints it.
type ResolvedLink struct {
	// Name is the interface name, or "Global" for the global section.
	Name  string
	Index int
	// CurrentServer is the server systemd-resolved asks now; invalid when none is shown.
	CurrentServer netip.Addr
	Servers       []netip.Addr
	// Domains are search domains ("lan") and routing domains ("~apps.example.com"), as printed.
	Domains []string
	// DefaultRoute is nil when the output does not say (old versions, the global section).
	DefaultRoute *bool
}

// HasRoutingDomainFor reports whether the link claims z with a search or routing domain that
// is z itself or a parent of it (which is how systemd-resolved matches), and the match length
// in labels ("~." matches everything with length 0). A domain that is not a DNS name (the link's
// list is exec output) claims nothing.
func (l ResolvedLink) HasRoutingDomainFor(z zone.Zone) (bool, int) {
	best, found := -1, false
	for _, d := range l.Domains {
		d = strings.TrimPrefix(d, "~")
		if d == "" || d == "." {
			found = true
			best = max(best, 0)
			continue
		}
		if dz, err := zone.Parse(d); err == nil && dz.Contains(z.String()) {
			found = true
			best = max(best, strings.Count(dz.String(), ".")+1)
		}
	}
	return found, best
}

var (
	// "Link 2 (enp0s31f6)"
	linkHeader = regexp.MustCompile(`^Link (\d+) \(([^)]+)\)\s*$`)
	// "Current DNS Server: 10.0.10.11": a key is words of letters, so that a continuation line
	// holding an IPv6 address ("fe80::1") is never taken for one.
	keyValue = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z ./]*[A-Za-z]):(?:\s+(.*))?$`)
	// The global section of systemd 252 prints these keys without a colon ("DNS Servers
	// 10.0.10.254"): resolvectl.c, status_global, dump_list(table, "DNS Servers", ...) in
	// systemd-stable v252.31, where the links' keys carry one.
	globalKeyNoColon = regexp.MustCompile(`^\s*(DNS Servers|Fallback DNS Servers|DNS Domain)\s+(\S.*)$`)
)

// ParseResolvectlStatus reads `resolvectl status` output of systemd 239 to 257: the one-line
// "Protocols: +DefaultRoute ..." form and the older "DefaultRoute setting: yes" form, and server
// lists on one line or continued (wrapped) on the following lines. Unknown keys are ignored.
func ParseResolvectlStatus(out []byte) []ResolvedLink {
	var links []ResolvedLink
	var cur *ResolvedLink
	lastKey := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		switch {
		case strings.TrimSpace(line) == "":
			lastKey = ""
			continue
		case line == "Global":
			links = append(links, ResolvedLink{Name: "Global"})
			cur, lastKey = &links[len(links)-1], ""
			continue
		}
		if m := linkHeader.FindStringSubmatch(line); m != nil {
			idx, _ := strconv.Atoi(m[1])
			links = append(links, ResolvedLink{Name: m[2], Index: idx})
			cur, lastKey = &links[len(links)-1], ""
			continue
		}
		if cur == nil {
			continue
		}
		m := keyValue.FindStringSubmatch(line)
		if m == nil && cur.Name == "Global" {
			m = globalKeyNoColon.FindStringSubmatch(line)
		}
		if m != nil {
			lastKey = strings.TrimSpace(m[1])
			applyResolvedField(cur, lastKey, m[2])
			continue
		}
		// A continuation line: more servers or domains for the last key.
		applyResolvedField(cur, lastKey, strings.TrimSpace(line))
	}
	return links
}

func applyResolvedField(l *ResolvedLink, key, value string) {
	switch key {
	case "Current DNS Server":
		if a, ok := parseServer(value); ok {
			l.CurrentServer = a
		}
	case "DNS Servers":
		for f := range strings.FieldsSeq(value) {
			if a, ok := parseServer(f); ok {
				l.Servers = append(l.Servers, a)
			}
		}
	case "DNS Domain":
		l.Domains = append(l.Domains, strings.Fields(value)...)
	case "Protocols":
		for f := range strings.FieldsSeq(value) {
			switch f {
			case "+DefaultRoute":
				l.DefaultRoute = new(true)
			case "-DefaultRoute":
				l.DefaultRoute = new(false)
			}
		}
	case "DefaultRoute setting":
		switch strings.TrimSpace(value) {
		case "yes":
			l.DefaultRoute = new(true)
		case "no":
			l.DefaultRoute = new(false)
		}
	}
}

// parseServer reads a server as resolvectl prints it: "10.0.10.11", "10.0.10.11:5353",
// "10.0.10.11#dns.example", "fe80::1%eth0", "[2001:db8::1]:53#name".
func parseServer(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// ParseResolvConf returns the nameserver lines of a resolv.conf, in order.
func ParseResolvConf(data []byte) []netip.Addr {
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, ok := parseServer(f[1]); ok {
				out = append(out, a)
			}
		}
	}
	return out
}
