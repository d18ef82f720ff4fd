// Package procnet parses the kernel's socket tables (/proc/net/tcp, tcp6, udp, udp6) as read
// from a node. It is pure: the text comes from wherever the caller read it (exec in a pod on
// the node), so the parser can be tested with recorded tables and fuzzed.
package procnet

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Table names one of the four socket tables; the name says the transport and the family.
type Table string

const (
	TCP  Table = "tcp"
	TCP6 Table = "tcp6"
	UDP  Table = "udp"
	UDP6 Table = "udp6"
)

// Tables lists the four tables in the order they are read.
func Tables() []Table { return []Table{TCP, TCP6, UDP, UDP6} }

// Protocol is "tcp" or "udp", the transport as a Service port names it (lower case).
func (t Table) Protocol() string { return strings.TrimSuffix(string(t), "6") }

// IPv6 reports whether the table holds AF_INET6 sockets.
func (t Table) IPv6() bool { return strings.HasSuffix(string(t), "6") }

func (t Table) valid() bool {
	switch t {
	case TCP, TCP6, UDP, UDP6:
		return true
	}
	return false
}

// Socket states as the kernel prints them (include/net/tcp_states.h). UDP reuses the TCP
// numbering: an unconnected (bound) UDP socket is TCP_CLOSE (07), a connected one 01.
const (
	StateEstablished uint8 = 0x01
	StateClose       uint8 = 0x07
	StateListen      uint8 = 0x0A
)

// Socket is one row of a table.
type Socket struct {
	Table  Table
	Local  netip.AddrPort
	Remote netip.AddrPort
	State  uint8
	UID    uint32
	// Inode identifies the socket system-wide: /proc/<pid>/fd/<n> links to "socket:[Inode]".
	Inode uint64
}

// Listening reports whether the socket accepts traffic from anyone: a TCP socket in LISTEN, or
// a UDP socket that is bound and not connected to one peer.
func (s Socket) Listening() bool {
	if s.Table.Protocol() == "tcp" {
		return s.State == StateListen
	}
	return s.State == StateClose
}

// Wildcard reports whether the socket is bound to every address (0.0.0.0 or ::).
func (s Socket) Wildcard() bool { return s.Local.Addr().IsUnspecified() }

func (s Socket) String() string {
	return fmt.Sprintf("%s %s state %02X inode %d uid %d", s.Table, s.Local, s.State, s.Inode, s.UID)
}

// LineError is a row that could not be parsed; the rest of the table is still returned.
type LineError struct {
	Table Table
	Line  int // 1-based, counting the header
	Text  string
	Err   error
}

func (e LineError) Error() string {
	return fmt.Sprintf("/proc/net/%s line %d %q: %v", e.Table, e.Line, e.Text, e.Err)
}

// Options describe the machine the table was read on.
type Options struct {
	// BigEndian is true when the node's CPU is big-endian (s390x): the kernel prints each
	// 32-bit word of an address in the CPU's byte order, so 127.0.0.1 reads "0100007F" on
	// amd64/arm64 and "7F000001" on s390x.
	BigEndian bool
}

// Parse reads one table. Malformed rows are returned as LineErrors, never a panic; the header
// and blank lines are skipped.
func Parse(table Table, data []byte, opts Options) ([]Socket, []LineError) {
	if !table.valid() {
		return nil, []LineError{{Table: table, Err: fmt.Errorf("unknown table %q (want tcp, tcp6, udp or udp6)", table)}}
	}
	var socks []Socket
	var errs []LineError
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "sl ") {
			continue
		}
		s, err := parseRow(table, line, opts)
		if err != nil {
			errs = append(errs, LineError{Table: table, Line: n, Text: truncate(line, 200), Err: err})
			continue
		}
		socks = append(socks, s)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, LineError{Table: table, Line: n + 1, Err: err})
	}
	return socks, errs
}

// Listeners is Parse keeping only the sockets that accept traffic (see Socket.Listening).
func Listeners(table Table, data []byte, opts Options) ([]Socket, []LineError) {
	all, errs := Parse(table, data, opts)
	var out []Socket
	for _, s := range all {
		if s.Listening() {
			out = append(out, s)
		}
	}
	return out, errs
}

// parseRow reads "sl: local remote st tx:rx tr:when retrnsmt uid timeout inode ...".
func parseRow(table Table, line string, opts Options) (Socket, error) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return Socket{}, fmt.Errorf("%d fields, want at least 10", len(f))
	}
	if !strings.HasSuffix(f[0], ":") {
		return Socket{}, fmt.Errorf("slot %q does not end with ':'", f[0])
	}
	local, err := parseAddrPort(f[1], table.IPv6(), opts)
	if err != nil {
		return Socket{}, fmt.Errorf("local address: %w", err)
	}
	remote, err := parseAddrPort(f[2], table.IPv6(), opts)
	if err != nil {
		return Socket{}, fmt.Errorf("remote address: %w", err)
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return Socket{}, fmt.Errorf("state %q: %w", f[3], err)
	}
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return Socket{}, fmt.Errorf("uid %q: %w", f[7], err)
	}
	inode, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return Socket{}, fmt.Errorf("inode %q: %w", f[9], err)
	}
	return Socket{Table: table, Local: local, Remote: remote, State: uint8(st), UID: uint32(uid), Inode: inode}, nil
}

// parseAddrPort reads "0100007F:0050" (IPv4) or 32 hex digits ":port" (IPv6). The port is
// printed already in host order; the address as 32-bit words in the CPU's byte order.
func parseAddrPort(s string, v6 bool, opts Options) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q has no ':'", s)
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || len(hexPort) != 4 {
		return netip.AddrPort{}, fmt.Errorf("port %q is not 4 hex digits", hexPort)
	}
	want := 8
	if v6 {
		want = 32
	}
	if len(hexAddr) != want {
		return netip.AddrPort{}, fmt.Errorf("address %q has %d hex digits, want %d", hexAddr, len(hexAddr), want)
	}
	raw := make([]byte, want/2)
	for i := range want / 8 {
		w, err := strconv.ParseUint(hexAddr[i*8:i*8+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q: %w", hexAddr, err)
		}
		// The kernel printed the word as a number in CPU order; writing the number back in
		// that order restores the bytes as they are in memory (network order).
		if opts.BigEndian {
			binary.BigEndian.PutUint32(raw[i*4:], uint32(w))
		} else {
			binary.LittleEndian.PutUint32(raw[i*4:], uint32(w))
		}
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
