package corefile

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Blocks of one zone and port are chosen top to bottom by view, as CoreDNS v1.14.7 does
// (plugin/view/README.md "Server Block Ordering"); the corpus case
// view-split-horizon-lan-subnet holds the real binary's answers from four sources, which the
// corpus truth test compares with this model.
func TestViewsChooseTheBlockBySource(t *testing.T) {
	const conf = `example.com:53 {
    view lan {
        expr incidr(client_ip(), '10.0.10.0/24') or incidr(client_ip(), '192.0.2.0/24')
    }
    template IN A {
        answer "{{ .Name }} 60 IN A 10.0.10.11"
    }
}
example.com:53 {
    view both {
        expr incidr(client_ip(), '198.51.100.0/24')
        expr incidr(client_ip(), '198.51.100.128/25')
    }
    template IN A {
        answer "{{ .Name }} 60 IN A 10.0.10.99"
    }
}
example.com:53 {
    forward . 198.51.100.53
}
`
	cf, err := Parse("Corefile", []byte(conf))
	require.NoError(t, err)
	require.True(t, cf.Starts(), "%v", cf.Problems)
	for _, tc := range []struct {
		src       string
		addr      string
		forwarded bool
	}{
		{"10.0.10.50", "10.0.10.11", false},
		{"192.0.2.1", "10.0.10.11", false},
		{"198.51.100.200", "10.0.10.99", false}, // every expr of a view must hold
		{"198.51.100.1", "", true},              // the first line holds, the second not
		{"10.244.1.1", "", true},                // no view admits it: the block without one
	} {
		o := cf.Query(Question{Name: "a.example.com", Type: dns.TypeA, Port: "53", Source: netip.MustParseAddr(tc.src)})
		require.True(t, o.Known(), "%s: %s", tc.src, o.Unknown)
		assert.Equal(t, tc.forwarded, o.Forwarded, tc.src)
		if tc.addr != "" {
			assert.Equal(t, []netip.Addr{netip.MustParseAddr(tc.addr)}, o.Addrs(), tc.src)
		}
		assert.Empty(t, o.View, "a question with a source is placed, not left to the caller")
	}
	o := cf.Query(Question{Name: "a.example.com", Type: dns.TypeA, Port: "53"})
	require.True(t, o.Known(), o.Unknown)
	assert.Equal(t, "lan (line 2)", o.View, "without a source: the first view's block, and the outcome says so")
}

// An expression the model does not evaluate leaves a question with a source unknown; with no
// view admitting it and no block without view, CoreDNS refuses.
func TestViewsTheModelDoesNotEvaluate(t *testing.T) {
	cf, err := Parse("Corefile", []byte("example.com:53 {\n view x {\n  expr name() == 'a.example.com.'\n }\n whoami\n}\n"))
	require.NoError(t, err)
	o := cf.Query(Question{Name: "a.example.com", Type: dns.TypeA, Port: "53", Source: netip.MustParseAddr("10.0.0.1")})
	assert.False(t, o.Known())
	assert.Contains(t, o.Unknown, "view x (line 2)")

	cf, err = Parse("Corefile", []byte("example.com:53 {\n view x {\n  expr incidr(client_ip(), '10.0.0.0/8')\n }\n whoami\n}\n"))
	require.NoError(t, err)
	o = cf.Query(Question{Name: "a.example.com", Type: dns.TypeA, Port: "53", Source: netip.MustParseAddr("192.0.2.1")})
	require.True(t, o.Known(), o.Unknown)
	assert.Equal(t, dns.RcodeRefused, o.Rcode)
}
