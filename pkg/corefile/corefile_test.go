package corefile

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func loadCorefile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corefiles", name))
	require.NoError(t, err)
	return b
}

func addrs(t *testing.T, ss ...string) []netip.Addr {
	t.Helper()
	out := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func ask(c *Corefile, name string, qtype uint16, port string) Outcome {
	return c.Query(Question{Name: name, Type: qtype, Port: port})
}

func TestCorefileSeedParsesIntoTwoBlocksThatAnswerTheZoneAndForwardTheRest(t *testing.T) {
	c, err := Parse("seed", loadCorefile(t, "seed.Corefile"))
	require.NoError(t, err)
	require.Len(t, c.Blocks, 2)
	assert.Empty(t, c.Problems)
	assert.True(t, c.Starts())
	assert.True(t, c.Reloads())

	zone := c.Blocks[0]
	assert.Equal(t, 1, zone.Line)
	assert.Equal(t, []Address{{Raw: "apps.example.com:1053", Transport: "dns", Zone: "apps.example.com.", Port: "1053"}}, zone.Addresses)
	require.Len(t, zone.Templates, 2)
	a := zone.Templates[0]
	assert.Equal(t, 4, a.Line)
	assert.Equal(t, []string{"apps.example.com."}, a.Zones)
	assert.Equal(t, addrs(t, "10.0.10.11", "10.0.10.12", "10.0.10.13"), a.Addrs())
	for i, ans := range a.Answers {
		assert.Equal(t, 5+i, ans.Line, "answer %d line", i)
		assert.True(t, ans.Static)
		assert.True(t, ans.OwnerIsQueryName)
		assert.Equal(t, uint32(60), ans.TTL)
	}
	assert.True(t, zone.Templates[1].CatchAll())
	assert.True(t, zone.Templates[1].NoData())
	assert.Equal(t, []string{"apps.example.com."}, c.TemplateAZones())

	o := ask(c, "Grafana.Apps.Example.com", dns.TypeA, "1053")
	require.True(t, o.Known(), o.Unknown)
	assert.Equal(t, addrs(t, "10.0.10.11", "10.0.10.12", "10.0.10.13"), o.Addrs())
	assert.True(t, o.Authoritative)
	assert.Equal(t, uint32(60), o.Records[0].Header().Ttl)
	assert.True(t, ask(c, "grafana.apps.example.com", dns.TypeAAAA, "1053").NoData(), "the catch-all answers NODATA")
	out := ask(c, "example.org", dns.TypeA, "1053")
	assert.True(t, out.Forwarded)
	assert.Equal(t, []string{"/etc/resolv.conf"}, out.Upstreams)
	assert.Equal(t, dns.RcodeRefused, ask(c, "example.org", dns.TypeA, "53").Rcode, "nothing listens on 53")
}

func TestCorefileQueriesFollowCoreDNSTemplateSemantics(t *testing.T) {
	tests := []struct {
		name, corefile string
		qname          string
		qtype          uint16
		check          func(t *testing.T, o Outcome)
	}{
		{"the catch-all first answers A with NODATA", "catchall-first.Corefile", "x.apps.example.com", dns.TypeA,
			func(t *testing.T, o Outcome) { t.Helper(); assert.True(t, o.NoData(), o.Describe()) }},
		{"without catch-all AAAA reaches no plugin: SERVFAIL", "no-catchall.Corefile", "x.apps.example.com", dns.TypeAAAA,
			func(t *testing.T, o Outcome) {
				t.Helper()
				assert.Equal(t, dns.RcodeServerFailure, o.Rcode, o.Describe())
			}},
		{"a zone-less catch-all in . answers every name NODATA", "zoneless-any-in-dot.Corefile", "example.org", dns.TypeA,
			func(t *testing.T, o Outcome) { t.Helper(); assert.True(t, o.NoData(), o.Describe()) }},
		{"an answer CoreDNS cannot build SERVFAILs the query", "bad-answer-ip.Corefile", "x.apps.example.com", dns.TypeA,
			func(t *testing.T, o Outcome) {
				t.Helper()
				assert.Equal(t, dns.RcodeServerFailure, o.Rcode, o.Describe())
			}},
		{"a match that does not match and no fallthrough: SERVFAIL", "dynamic-answer.Corefile", "grafana.apps.example.com", dns.TypeA,
			func(t *testing.T, o Outcome) {
				t.Helper()
				assert.Equal(t, dns.RcodeServerFailure, o.Rcode, o.Describe())
			}},
		{"groups of the match fill the answer", "dynamic-answer.Corefile", "10-12.apps.example.com", dns.TypeA,
			func(t *testing.T, o Outcome) {
				t.Helper()
				assert.Equal(t, addrs(t, "10.0.10.12"), o.Addrs(), o.Describe())
			}},
		{"the file plugin answers from its zone file", "file-plugin.Corefile", "x.apps.example.com", dns.TypeA,
			func(t *testing.T, o Outcome) {
				t.Helper()
				assert.False(t, o.Known())
				assert.False(t, o.Forwarded)
				assert.Equal(t, "file", o.By.Name)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.corefile, loadCorefile(t, tt.corefile))
			require.NoError(t, err)
			tt.check(t, ask(c, tt.qname, tt.qtype, "1053"))
		})
	}
}

func TestCorefileFallthroughOnlyMattersForNamesAMatchDoesNotMatch(t *testing.T) {
	c, err := Parse("x", []byte(`.:53 {
    template ANY ANY apps.example.com {
        rcode NOERROR
        fallthrough
    }
    template IN A apps.example.com {
        match ^ip-(?P<a>[0-9]+)[.]apps[.]example[.]com[.]$
        answer "{{ .Name }} 60 IN A 10.0.10.{{ .Group.a }}"
        fallthrough
    }
    forward . 192.0.2.1
}`))
	require.NoError(t, err)
	assert.True(t, ask(c, "grafana.apps.example.com", dns.TypeA, "53").NoData(), "the catch-all matches every name: its fallthrough never applies")
	d, err := Parse("x", []byte(`.:53 {
    template IN A apps.example.com {
        match ^ip-(?P<a>[0-9]+)[.]apps[.]example[.]com[.]$
        answer "{{ .Name }} 60 IN A 10.0.10.{{ .Group.a }}"
        fallthrough
    }
    forward . 192.0.2.1
}`))
	require.NoError(t, err)
	assert.Equal(t, addrs(t, "10.0.10.7"), ask(d, "ip-7.apps.example.com", dns.TypeA, "53").Addrs())
	assert.True(t, ask(d, "grafana.apps.example.com", dns.TypeA, "53").Forwarded, "a name the match misses falls through to forward")
}

func TestCorefileIPv6InATemplateServfailsEveryAQuery(t *testing.T) {
	c, err := Parse("x", []byte(`apps.example.com:53 {
    template IN A {
        answer "{{ .Name }} 60 IN A 10.0.10.11"
        answer "{{ .Name }} 60 IN A fd00:10::11"
    }
    template ANY ANY {
        rcode NOERROR
    }
}`))
	require.NoError(t, err)
	assert.True(t, c.Starts(), "answers are built at query time")
	assert.Equal(t, dns.RcodeServerFailure, ask(c, "a.apps.example.com", dns.TypeA, "53").Rcode)
	assert.True(t, ask(c, "a.apps.example.com", dns.TypeAAAA, "53").NoData())
	assert.NotEmpty(t, c.Blocks[0].Templates[0].Answers[1].Err)
}

func TestCorefileOverlappingListenersStopCoreDNS(t *testing.T) {
	c, err := Parse("x", []byte("a:53 {\n bind 127.0.0.1\n whoami\n}\na:53 {\n whoami\n}"))
	require.NoError(t, err)
	require.False(t, c.Starts())
	assert.Equal(t, "cannot serve dns://a.:53 - zone overlap listener capacity with dns://a.:53 on 127.0.0.1", c.Problems[0].Message)
}

func TestCorefileReloadIsProcessWide(t *testing.T) {
	c, err := Parse("x", []byte("a:53 {\n whoami\n}\n.:53 {\n reload\n forward . 192.0.2.1\n}"))
	require.NoError(t, err)
	assert.False(t, c.Blocks[0].HasReload())
	assert.True(t, c.Reloads(), "one reload reloads every block")
}

func TestCorefileSyntaxErrorsNameTheLineAsCaddyDoes(t *testing.T) {
	_, err := Parse("ConfigMap lan-dns/lan-dns", loadCorefile(t, "unclosed-brace.Corefile"))
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 8, pe.Line)
	assert.Contains(t, err.Error(), "ConfigMap lan-dns/lan-dns line 8:")

	_, err = Parse("x", loadCorefile(t, "swallowed-block.Corefile"))
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 7, pe.Line)
	assert.Contains(t, pe.Msg, "Unknown directive '.:1053'")
	assert.Contains(t, pe.Hint, "'}' is probably missing")
}

func TestCorefileServerBlockKeysAreNormalisedLikeCoreDNS(t *testing.T) {
	tests := []struct {
		key     string
		want    []Address
		wantErr string
	}{
		{key: "Apps.Example.com", want: []Address{{Raw: "Apps.Example.com", Transport: "dns", Zone: "apps.example.com.", Port: "53"}}},
		{key: ".:1053", want: []Address{{Raw: ".:1053", Transport: "dns", Zone: ".", Port: "1053"}}},
		{key: "tls://example.org", want: []Address{{Raw: "tls://example.org", Transport: "tls", Zone: "example.org.", Port: "853"}}},
		{key: "10.0.10.0/24", want: []Address{{Raw: "10.0.10.0/24", Transport: "dns", Zone: "10.0.10.in-addr.arpa.", Port: "53"}}},
		{key: "10.0.10.0/23", want: []Address{
			{Raw: "10.0.10.0/23", Transport: "dns", Zone: "10.0.10.in-addr.arpa.", Port: "53"},
			{Raw: "10.0.10.0/23", Transport: "dns", Zone: "11.0.10.in-addr.arpa.", Port: "53"}}},
		{key: "example.org:", wantErr: "expecting data after last colon"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := parseKey(tt.key)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCorefileSnippetsAreExpandedAndEnvPlaceholdersStayUnknown(t *testing.T) {
	c, err := Parse("x", loadCorefile(t, "snippets-and-env.Corefile"))
	require.NoError(t, err)
	require.Len(t, c.Blocks, 1, "the snippet is not a server block")
	b := c.Blocks[0]
	assert.Equal(t, 5, b.Line)
	assert.Equal(t, "{$DNS_PORT}", b.Addresses[0].Port, "a variable the pod spec does not give stays as written")
	assert.True(t, b.HasReload(), "snippet imports are expanded")
	assert.Equal(t, `{{ .Name }} {$TTL} IN A 10.0.10.11`, b.Templates[0].Answers[0].Text)
	assert.Empty(t, c.Incomplete)
}

func TestCorefileZoneFileSerialIsReadOrTheLineNamed(t *testing.T) {
	serial, err := ZoneFileSerial(nil, "apps.example.com", "db.apps", "$TTL 60\n@ IN SOA ns hostmaster 2024010101 7200 3600 1209600 60\n@ IN A 10.0.10.11\n")
	require.NoError(t, err)
	assert.Equal(t, uint32(2024010101), serial)
	_, err = ZoneFileSerial(nil, "apps.example.com", "db.apps", "@ IN A 10.0.10.11\n@ IN SOA ns hostmaster notanumber 1 1 1 1\n")
	assert.ErrorContains(t, err, "line: 2")
	_, err = ZoneFileSerial(nil, "apps.example.com", "db.apps", "@ IN A 10.0.10.11\n")
	assert.ErrorContains(t, err, "no SOA")
}

// A zone file is outside data: its $INCLUDE is followed only into the pod's ConfigMap files
// (never this machine's), and a $GENERATE that expands without end is left unread, quickly.
func TestZoneFileIncludesAndGeneratesAreBounded(t *testing.T) {
	const soa = "$ORIGIN a.\n@ 60 IN SOA ns host 1 2 3 4 5\n"
	pod := func(extra map[string]File) *Files {
		f := NewFiles()
		m := map[string]File{"Corefile": {Content: "a:53 {\n file /etc/coredns/db.a\n}\n"}}
		maps.Copy(m, extra)
		f.MountVolume("/etc/coredns", m)
		return f
	}
	t.Run("an include of this machine's files is never opened", func(t *testing.T) {
		c, err := Load("t", pod(map[string]File{"db.a": {Content: soa + "$INCLUDE /etc/passwd\n"}}), "/etc/coredns/Corefile")
		require.NoError(t, err)
		assert.Empty(t, c.Problems, "CoreDNS may well start: the pod's /etc/passwd is not ours to read")
		require.Len(t, c.Incomplete, 1)
		assert.Contains(t, c.Incomplete[0], "/etc/passwd is not in a ConfigMap volume of the pod")
	})
	t.Run("an include of the pod's ConfigMap is read", func(t *testing.T) {
		serial, err := ZoneFileSerial(pod(map[string]File{"db.soa": {Content: soa}}), "a", "/etc/coredns/db.a", "$INCLUDE db.soa\n")
		require.NoError(t, err)
		assert.Equal(t, uint32(1), serial)
	})
	t.Run("a generate bomb stops at the record cap", func(t *testing.T) {
		bomb := soa + strings.Repeat("$GENERATE 1-65535 h$ A 10.0.0.1\n", 100)
		start := time.Now()
		_, err := ZoneFileSerial(nil, "a", "db.a", bomb)
		require.ErrorIs(t, err, ErrZoneUnread)
		assert.Contains(t, err.Error(), "more than 200000 records")
		t.Logf("stopped after %s", time.Since(start))
	})
}

// Issue 23: the record cap applied per parse, but a zone file is parsed once per origin (and
// again for its serial and its answers): 16 origins in 275 bytes took 4-8 s. The cap is one
// budget for everything one Corefile read parses, and a parse that hit it is not run again.
func TestZoneFileRecordCapIsOneBudgetPerCorefileRead(t *testing.T) {
	origins := make([]string, 16)
	for i := range origins {
		origins[i] = fmt.Sprintf("z%d.", i)
	}
	f := NewFiles()
	f.MountVolume("/etc/coredns", map[string]File{
		"Corefile": {Content: strings.Join(origins, " ") + ":53 {\n file /etc/coredns/db " + strings.Join(origins, " ") + "\n}\n"},
		"db":       {Content: "@ 60 IN SOA ns host 1 2 3 4 5\n" + strings.Repeat("$GENERATE 1-65535 h$ A 10.0.0.1\n", 4)},
	})
	c, err := Load("t", f, "/etc/coredns/Corefile")
	require.NoError(t, err)
	assert.NotEmpty(t, c.Incomplete, "the zone file is left unread and said so")
	assert.LessOrEqual(t, f.zoneRecords, maxZoneRecords+len(origins), "one budget for the whole read, not one per origin")
	before := f.zoneRecords
	for _, o := range origins {
		_, err := ZoneFileSerial(f, o, "/etc/coredns/db", f.files["/etc/coredns/db"].Content)
		require.ErrorIs(t, err, ErrZoneUnread)
	}
	assert.Equal(t, before, f.zoneRecords, "a parse that hit the cap is not run again")

	legit := NewFiles()
	big := "@ 60 IN SOA ns host 1 2 3 4 5\n$GENERATE 1-60000 h$ A 10.0.0.1\n$GENERATE 1-60000 g$ A 10.0.0.1\n"
	for range 2 { // 2 x 120,000 records: more than one budget
		serial, err := ZoneFileSerial(legit, "a.", "/db", big)
		require.NoError(t, err, "a zone within the cap is read again as often as asked")
		assert.Equal(t, uint32(1), serial)
	}
}

// A template answer is built with dns.NewRR, whose ReadRR allows $INCLUDE (miekg/dns
// scan.go): CoreDNS reads the file in its pod. Here no answer ever opens a file of this
// machine, even one that never ends: it is left unread, and what CoreDNS answers is unknown.
func TestATemplateAnswerNeverOpensALocalFile(t *testing.T) {
	for _, answer := range []string{`$INCLUDE /dev/zero`, `$INCLUDE /etc/passwd`, `$INCLUDE ../../../../etc/passwd apps.example.com.`} {
		c, err := Parse("x", []byte("apps.example.com:53 {\n template IN A {\n  answer \""+answer+"\"\n }\n}\n"))
		require.NoError(t, err)
		a := c.Blocks[0].Templates[0].Answers[0]
		assert.NotContains(t, a.Err+a.Record, "root:", "no file content reaches the report")
		require.NotEmpty(t, a.Unread, answer)
		assert.False(t, a.Static, answer)
		assert.Contains(t, a.Unread, "$INCLUDE")
		o := ask(c, "a.apps.example.com", dns.TypeA, "53")
		assert.Contains(t, o.Unknown, "is not read", answer)
	}
	c, err := Parse("x", []byte("apps.example.com:53 {\n template IN A {\n  answer \"$GENERATE 1-65535 h$ A 10.0.0.1\"\n }\n}\n"))
	require.NoError(t, err)
	assert.Empty(t, c.Blocks[0].Templates[0].Answers[0].Unread, "$GENERATE is read as NewRR reads it: its first record")
}
