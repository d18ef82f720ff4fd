package corefile

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The acl plugin as CoreDNS v1.14.7 runs it (plugin/acl/acl.go, setup.go); the corpus case
// acl-lan-subnet-only holds the real binary's answers from four sources, which the corpus
// truth test compares with this model.
func TestACLJudgesBySourceAsCoreDNS(t *testing.T) {
	const zone = `apps.example.com:1053 {
    acl {
        allow net 10.0.10.0/24
        filter type AAAA net 192.0.2.7
        drop net 203.0.113.0/24
        block
    }
    acl other.example.com {
        block net *
    }
    template IN A apps.example.com {
        answer "{{ .Name }} 60 IN A 10.0.10.11"
    }
    template IN AAAA apps.example.com {
        rcode NOERROR
    }
}
`
	cf, err := Parse("Corefile", []byte(zone))
	require.NoError(t, err)
	require.True(t, cf.Starts(), "%v", cf.Problems)
	for _, tc := range []struct {
		name   string
		src    string
		qtype  uint16
		rcode  int
		drop   bool
		answer bool
	}{
		{"the LAN is allowed", "10.0.10.50", dns.TypeA, dns.RcodeSuccess, false, true},
		{"a masqueraded pod bridge address is refused", "10.244.1.1", dns.TypeA, dns.RcodeRefused, false, false},
		{"a bare address is one /32: filter for its type", "192.0.2.7", dns.TypeAAAA, dns.RcodeSuccess, false, false},
		{"filter is for its type only: the next policy blocks A", "192.0.2.7", dns.TypeA, dns.RcodeRefused, false, false},
		{"drop answers nothing", "203.0.113.9", dns.TypeA, -1, true, false},
		{"an IPv4-mapped source is its IPv4 address", "::ffff:10.0.10.50", dns.TypeA, dns.RcodeSuccess, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := cf.Query(Question{Name: "wiki.apps.example.com", Type: tc.qtype, Port: "1053", Source: netip.MustParseAddr(tc.src)})
			require.True(t, o.Known(), o.Unknown)
			assert.Equal(t, tc.drop, o.Dropped)
			assert.Equal(t, tc.rcode, o.Rcode, o.Describe())
			assert.Equal(t, tc.answer, len(o.Records) > 0, o.Describe())
			assert.Nil(t, o.ACL, "a question with a source is judged, not left to the caller")
		})
	}
	o := cf.Query(Question{Name: "wiki.apps.example.com", Type: dns.TypeA, Port: "1053"})
	require.True(t, o.Known(), o.Unknown)
	assert.Len(t, o.Records, 1, "without a source: the answer of the clients the acl lets through")
	require.NotNil(t, o.ACL, "and the outcome says an acl decides who gets it")
	assert.Equal(t, 2, o.ACL.Plugin.Line)
}

// Rules are tried in order: allow ends the acl (a later rule that would block is not reached),
// a rule of other zones is skipped, and no matching policy lets the query go on.
func TestACLRulesInOrder(t *testing.T) {
	mk := func(src string) *ACL {
		cf, err := Parse("Corefile", []byte(src))
		require.NoError(t, err)
		require.True(t, cf.Starts(), "%v", cf.Problems)
		a := cf.Blocks[0].ACL()
		require.NotNil(t, a)
		return a
	}
	lan := netip.MustParseAddr("10.0.10.50")
	a := mk("example.com {\n acl {\n  allow net 10.0.10.0/24\n }\n acl {\n  block\n }\n whoami\n}\n")
	act, line := a.Judge("x.example.com.", dns.TypeA, lan)
	assert.Equal(t, ACLAllow, act)
	assert.Equal(t, 3, line)
	act, _ = a.Judge("x.example.com.", dns.TypeA, netip.MustParseAddr("198.51.100.1"))
	assert.Equal(t, ACLBlock, act, "the first rule has no policy for it; the second blocks")
	a = mk("example.com {\n acl other.example.com {\n  block\n }\n whoami\n}\n")
	act, _ = a.Judge("x.example.com.", dns.TypeA, lan)
	assert.Equal(t, ACLNone, act, "a rule of another zone")
	act, _ = a.Judge("x.other.example.com.", dns.TypeA, lan)
	assert.Equal(t, ACLBlock, act)
	a = mk("example.com {\n acl {\n  block type AAAA\n }\n whoami\n}\n")
	act, _ = a.Judge("x.example.com.", dns.TypeA, lan)
	assert.Equal(t, ACLNone, act, "a policy for another type")
}

// An acl CoreDNS would refuse is not judged.
func TestACLThatDoesNotParseIsUnknown(t *testing.T) {
	b := ServerBlock{Addresses: []Address{{Zone: "example.com.", Port: "53", Transport: "dns"}},
		Plugins: []Plugin{{Name: "acl", Line: 2, Block: []Line{{Name: "permit", Line: 3}}}, {Name: "whoami", Line: 5}}}
	assert.Nil(t, b.ACL())
	for _, args := range [][]string{{"net"}, {"type", "NOPE"}, {"net", "10.0.0.0/33"}, {"nets", "10.0.0.0/8"}} {
		b.Plugins[0].Block = []Line{{Name: "allow", Line: 3, Args: args}}
		assert.Nil(t, b.ACL(), "%v", args)
	}
}
