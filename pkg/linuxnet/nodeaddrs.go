package linuxnet

import (
	"errors"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The markers of NodeAddrCommand's and LinkStateCommand's output.
const (
	MarkAddrs   = "@@lanaccess-ip-addr"
	markNoIP    = "@@lanaccess-no-ip"
	markFibTrie = "@@lanaccess-fib-trie"
	markIfInet6 = "@@lanaccess-if-inet6"
	markLinks   = "@@lanaccess-links"
	MarkLink    = "@@lanaccess-link "
)

// NodeAddrCommand prints a node's addresses with `ip -o addr show` (iproute2 or busybox),
// or, where the reader's image has no `ip`, /proc/net/fib_trie and /proc/net/if_inet6; then
// the names under /sys/class/net. Read-only, busybox tools only.
func NodeAddrCommand() []string {
	return []string{"sh", "-c", `echo ` + MarkAddrs + `; ip -o addr show 2>/dev/null || { echo ` + markNoIP +
		`; echo ` + markFibTrie + `; cat /proc/net/fib_trie; echo ` + markIfInet6 + `; cat /proc/net/if_inet6 2>/dev/null; }; echo ` + markLinks + `; ls /sys/class/net`}
}

// LinkStateCommand prints /sys/class/net/IF/{operstate,speed,duplex} and whether IF has a
// device, for each name given (names are passed as arguments, never in the script).
func LinkStateCommand(names []string) []string {
	script := `for n; do echo "` + MarkLink + `$n"; for f in operstate speed duplex; do v=$(cat "/sys/class/net/$n/$f" 2>/dev/null); echo "$f=$v"; done; ` +
		`if [ -e "/sys/class/net/$n/device" ]; then echo device=yes; else echo device=no; fi; done`
	return append([]string{"sh", "-c", script, "sh"}, names...)
}

// NodeAddrOutput is NodeAddrCommand's output, read.
type NodeAddrOutput struct {
	// Named is false when the addresses came from fib_trie (no `ip`): IPv4 addresses are then
	// in Loose, without their interface, and Interfaces hold if_inet6's IPv6 ones.
	Named      bool
	Interfaces []Interface
	Loose      []netip.Addr
	// Links are the names under /sys/class/net.
	Links []string
}

// ParseNodeAddrOutput reads NodeAddrCommand's output. Output without its markers is an error:
// whatever ran was not the command.
func ParseNodeAddrOutput(out string) (NodeAddrOutput, error) {
	sections := map[string]*strings.Builder{}
	var cur *strings.Builder
	for line := range strings.SplitSeq(out, "\n") {
		switch t := strings.TrimSpace(line); t {
		case MarkAddrs, markNoIP, markFibTrie, markIfInet6, markLinks:
			cur = &strings.Builder{}
			sections[t] = cur
			continue
		}
		if cur != nil {
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	var o NodeAddrOutput
	addrs, links := sections[MarkAddrs], sections[markLinks]
	if addrs == nil || links == nil {
		return o, errors.New("the node's addresses were not in the output (the command did not run as expected)")
	}
	for name := range strings.FieldsSeq(links.String()) {
		if ValidInterfaceName(name) && !slices.Contains(o.Links, name) {
			o.Links = append(o.Links, name)
		}
	}
	if _, noIP := sections[markNoIP]; !noIP {
		o.Named = true
		o.Interfaces = ParseIPAddr(addrs.String())
		return o, nil
	}
	if fib := sections[markFibTrie]; fib != nil {
		o.Loose = ParseFibTrieLocal(fib.String())
	}
	if v6 := sections[markIfInet6]; v6 != nil {
		o.Interfaces = ParseIfInet6(v6.String())
	}
	if len(o.Loose) == 0 && len(o.Interfaces) == 0 {
		return o, errors.New("no address could be read: no `ip` in the reader's image, and /proc/net/fib_trie gave none")
	}
	return o, nil
}

// ParseFibTrieLocal returns the node's IPv4 addresses from /proc/net/fib_trie: each leaf
// "|-- A.B.C.D" followed by a "/32 host LOCAL" alias is an address of the node (the kernel's
// local table, net/ipv4/fib_trie.c fib_trie_seq_show). Duplicates (the file lists the main
// and the local table) are dropped.
func ParseFibTrieLocal(s string) []netip.Addr {
	var out []netip.Addr
	var leaf netip.Addr
	for line := range strings.SplitSeq(s, "\n") {
		t := strings.TrimLeft(strings.TrimSpace(line), "|+-` ")
		if a, err := netip.ParseAddr(strings.TrimSpace(t)); err == nil && a.Is4() {
			leaf = a
			continue
		}
		if strings.HasPrefix(t, "/32 host LOCAL") && leaf.IsValid() && !slices.Contains(out, leaf) {
			out = append(out, leaf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// ParseIfInet6 reads /proc/net/if_inet6: "ADDR(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME"
// (net/ipv6/addrconf.c if6_seq_show).
func ParseIfInet6(s string) []Interface {
	var out []Interface
	pos := map[string]int{}
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || len(f[0]) != 32 || !ValidInterfaceName(f[5]) {
			continue
		}
		var raw [16]byte
		ok := true
		for i := range 16 {
			b, err := strconv.ParseUint(f[0][2*i:2*i+2], 16, 8)
			ok = ok && err == nil
			raw[i] = byte(b)
		}
		idx, err1 := strconv.ParseUint(f[1], 16, 31)
		bits, err2 := strconv.ParseUint(f[2], 16, 8)
		if !ok || err1 != nil || err2 != nil || bits > 128 || idx == 0 {
			continue
		}
		p := netip.PrefixFrom(netip.AddrFrom16(raw), int(bits))
		i, seen := pos[f[5]]
		if !seen {
			i = len(out)
			pos[f[5]] = i
			out = append(out, Interface{Name: f[5], Index: int(idx)})
		}
		out[i].Addrs = append(out[i].Addrs, IfAddr{Prefix: p})
	}
	return out
}

// SysfsLink is what LinkStateCommand printed for one interface, as read (values bounded).
type SysfsLink struct {
	OperState, Speed, Duplex string
	Device                   bool
}

// ParseSysfsLinks reads LinkStateCommand's output, by interface name (a name printed twice:
// the last wins).
func ParseSysfsLinks(out string) map[string]SysfsLink {
	links := map[string]SysfsLink{}
	cur := ""
	for line := range strings.SplitSeq(out, "\n") {
		if name, ok := strings.CutPrefix(line, MarkLink); ok {
			cur = ""
			if ValidInterfaceName(name) {
				cur = name
				links[cur] = SysfsLink{}
			}
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if cur == "" || !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) > 32 {
			v = v[:32] // sysfs values are short; anything longer is not one
		}
		l := links[cur]
		switch k {
		case "operstate":
			l.OperState = v
		case "speed":
			l.Speed = v
		case "duplex":
			l.Duplex = v
		case "device":
			l.Device = v == "yes"
		}
		links[cur] = l
	}
	return links
}
