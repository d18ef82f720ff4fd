package procnet

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The testdata tables were recorded on an amd64 host while a script held: TCP listeners on
// 127.0.0.53:5353, [::]:8080 and [::ffff:127.0.0.1]:8443, one established TCP pair, and UDP
// sockets bound to 0.0.0.0:5354 and [::1]:5355.
func recorded(tb testing.TB, table Table) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", string(table)+".txt"))
	require.NoError(tb, err)
	return b
}

func TestRecordedTablesParseEveryRowWithTheKernelsByteOrder(t *testing.T) {
	cases := []struct {
		table     Table
		rows      int
		listeners []string
	}{
		{TCP, 4, []string{"0.0.0.0:2024", "127.0.0.53:5353"}},
		{TCP6, 2, []string{"[::]:8080", "[::ffff:127.0.0.1]:8443"}},
		{UDP, 1, []string{"0.0.0.0:5354"}},
		{UDP6, 1, []string{"[::1]:5355"}},
	}
	for _, c := range cases {
		t.Run(string(c.table), func(t *testing.T) {
			all, errs := Parse(c.table, recorded(t, c.table), Options{})
			require.Empty(t, errs)
			assert.Len(t, all, c.rows)
			ls, _ := Listeners(c.table, recorded(t, c.table), Options{})
			var got []string
			for _, s := range ls {
				got = append(got, s.Local.String())
			}
			assert.Equal(t, c.listeners, got)
		})
	}
}

func TestAnEstablishedTCPSocketIsNotAListener(t *testing.T) {
	all, errs := Parse(TCP, recorded(t, TCP), Options{})
	require.Empty(t, errs)
	var established []Socket
	for _, s := range all {
		if s.State == StateEstablished {
			established = append(established, s)
		}
	}
	require.Len(t, established, 2)
	for _, s := range established {
		assert.False(t, s.Listening(), s.String())
	}
	assert.Equal(t, netip.MustParseAddrPort("127.0.0.1:59926"), established[1].Local)
	assert.Equal(t, uint64(45814), established[1].Inode)
}

func TestRowFieldsCarryInodeUIDAndState(t *testing.T) {
	row := "   1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 987654 1 0000000000000000 100 0 0 10 0\n"
	s, errs := Parse(TCP, []byte(row), Options{})
	require.Empty(t, errs)
	require.Len(t, s, 1)
	assert.Equal(t, Socket{
		Table:  TCP,
		Local:  netip.MustParseAddrPort("0.0.0.0:80"),
		Remote: netip.MustParseAddrPort("0.0.0.0:0"),
		State:  StateListen, UID: 101, Inode: 987654,
	}, s[0])
	assert.True(t, s[0].Wildcard())
	assert.Equal(t, "tcp", s[0].Table.Protocol())
}

func TestBigEndianNodesPrintAddressesInNetworkOrder(t *testing.T) {
	cases := []struct {
		name  string
		table Table
		row   string
		opts  Options
		want  string
	}{
		{"ipv4 little endian", UDP, "0: 0A000A0C:0035 00000000:0000 07 0:0 0:0 0 0 0 11 2", Options{}, "12.10.0.10:53"},
		{"ipv4 big endian", UDP, "0: 0A000A0C:0035 00000000:0000 07 0:0 0:0 0 0 0 11 2", Options{BigEndian: true}, "10.0.10.12:53"},
		{"ipv6 little endian", TCP6, "0: B80D0120000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 12 1", Options{}, "[2001:db8::1]:443"},
		{"ipv6 big endian", TCP6, "0: 20010DB8000000000000000000000001:01BB 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 12 1", Options{BigEndian: true}, "[2001:db8::1]:443"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, errs := Parse(c.table, []byte(c.row), c.opts)
			require.Empty(t, errs)
			require.Len(t, s, 1)
			assert.Equal(t, c.want, s[0].Local.String())
		})
	}
}

func TestMalformedRowsAreReportedWithTheirLineAndTheRestIsKept(t *testing.T) {
	table := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0\n" +
		"   1: 0000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0\n" +
		"   2: 00000000:50 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0\n" +
		"   3: 00000000:0050 00000000:0000 ZZ 00000000:00000000 00:00000000 00000000     0        0 4 1 0\n" +
		"   4: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     x        0 5 1 0\n" +
		"   5: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 -6 1 0\n" +
		"   6: 00000000:0050\n" +
		"   7 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1 0\n" +
		"   8: 0000000G:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 8 1 0\n" +
		"   9: 00000000:0050 000000000000 0A 00000000:00000000 00:00000000 00000000     0        0 9 1 0\n"
	socks, errs := Parse(TCP, []byte(table), Options{})
	require.Len(t, socks, 1)
	assert.Equal(t, uint64(1), socks[0].Inode)
	lines := make([]int, 0, len(errs))
	for _, e := range errs {
		lines = append(lines, e.Line)
		assert.Contains(t, e.Error(), "/proc/net/tcp line")
	}
	assert.Equal(t, []int{3, 4, 5, 6, 7, 8, 9, 10, 11}, lines)
}

func TestAnUnknownTableIsAnErrorNotAGuess(t *testing.T) {
	_, errs := Parse(Table("raw"), []byte("0: 00000000:0050"), Options{})
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "unknown table")
}

func TestUDPConnectedSocketsAreNotListeners(t *testing.T) {
	row := "0: 0100007F:0035 0100007F:D431 01 0:0 0:0 0 0 0 77 2\n1: 00000000:0035 00000000:0000 07 0:0 0:0 0 0 0 78 2"
	ls, errs := Listeners(UDP, []byte(row), Options{})
	require.Empty(t, errs)
	require.Len(t, ls, 1)
	assert.Equal(t, uint64(78), ls[0].Inode)
}

func FuzzParse(f *testing.F) {
	for _, tb := range Tables() {
		f.Add(string(tb), recorded(f, tb))
	}
	f.Add("tcp", []byte("0: :\n"))
	f.Add("udp6", []byte("0: 00000000000000000000000000000000:FFFF 0:0 07 0 0 0 0 0 1"))
	f.Fuzz(func(t *testing.T, table string, data []byte) {
		socks, errs := Parse(Table(table), data, Options{})
		for _, s := range socks {
			// Every returned socket must be a well-formed row of the table asked for.
			if s.Table != Table(table) || !s.Local.IsValid() || !s.Remote.IsValid() {
				t.Fatalf("invalid socket %+v from %q", s, data)
			}
			if Table(table).IPv6() != s.Local.Addr().Is6() {
				t.Fatalf("family mismatch for %s: %s", table, s.Local)
			}
		}
		for _, e := range errs {
			if e.Err == nil {
				t.Fatalf("line error without a cause: %+v", e)
			}
		}
	})
}
