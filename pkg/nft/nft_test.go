package nft

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The testdata are real nft outputs of the rulesets in record_test.go, loaded into a network
// namespace by nftables 1.0.6 (and iptables-nft 1.8.9 for iptables-nft.*).

func parseBoth(t *testing.T, name string) map[string]Ruleset {
	t.Helper()
	j, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	require.NoError(t, err)
	txt, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	require.NoError(t, err)
	fromJSON, err := ParseJSON(j)
	require.NoError(t, err)
	fromText, err := ParseText(string(txt))
	require.NoError(t, err)
	return map[string]Ruleset{"json": fromJSON, "text": fromText}
}

func TestTheSourceNATOfThePoolIsReadFromBothForms(t *testing.T) {
	pool := netip.MustParsePrefix("10.8.0.0/24")
	for name, want := range map[string][]string{
		"masquerade":     {"ip nat postrouting MASQUERADE 10.8.0.0/24 out eth0"},
		"iptables-nft":   {"ip nat POSTROUTING MASQUERADE 10.8.0.0/24 out eth0"},
		"inet-jump-snat": {"inet vpn vpn_clients SNAT 10.8.0.0/24 to 10.244.1.5"},
		"sets":           {"ip nat postrouting MASQUERADE from set"},
		"negated":        {"ip nat postrouting MASQUERADE != 10.244.0.0/16 out eth0"},
		"conditional":    nil, // only TCP to 443: not every packet of the pool
		"return-first":   nil, // the pool returns before the masquerade
		"other-pool":     nil, // another pool; a DNAT in prerouting is not source NAT
	} {
		for form, rs := range parseBoth(t, name) {
			t.Run(name+"/"+form, func(t *testing.T) {
				rules := rs.SourceNATFor(pool)
				got := make([]string, 0, len(rules))
				for _, r := range rules {
					s := r.Chain + " " + r.Target
					switch {
					case r.Source.IsValid() && r.SourceNegated:
						s += " != " + r.Source.String()
					case r.Source.IsValid():
						s += " " + r.Source.String()
					default:
						s += " from set"
					}
					if r.OutIface != "" {
						s += " out " + r.OutIface
					}
					if r.ToSource != "" {
						s += " to " + r.ToSource
					}
					assert.NotEmpty(t, r.Raw)
					got = append(got, s)
				}
				if len(want) == 0 {
					assert.Empty(t, got)
				} else {
					assert.Equal(t, want, got)
				}
			})
		}
	}
}

func TestAnAnonymousSetCoversItsMembersOnly(t *testing.T) {
	for form, rs := range parseBoth(t, "sets") {
		assert.Len(t, rs.SourceNATFor(netip.MustParsePrefix("10.9.0.0/25")), 1, form)
		assert.Len(t, rs.SourceNATFor(netip.MustParsePrefix("10.10.0.7/32")), 1, form)
		assert.Empty(t, rs.SourceNATFor(netip.MustParsePrefix("10.10.0.0/24")), "%s: one host of the pool is not the pool", form)
	}
}

func TestAnUnknownNamedSetIsNotTakenForTheAnswer(t *testing.T) {
	rs, err := ParseText("table ip nat {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tip saddr @elsewhere masquerade\n\t}\n}\n")
	require.NoError(t, err)
	assert.Empty(t, rs.SourceNATFor(netip.MustParsePrefix("10.8.0.0/24")))
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"masquerade", "sets", "inet-jump-snat"} {
		j, _ := os.ReadFile(filepath.Join("testdata", name+".json"))
		txt, _ := os.ReadFile(filepath.Join("testdata", name+".txt"))
		f.Add(string(j))
		f.Add(string(txt))
	}
	f.Fuzz(func(_ *testing.T, s string) {
		pool := netip.MustParsePrefix("10.8.0.0/24")
		if rs, err := ParseJSON([]byte(s)); err == nil {
			_ = rs.SourceNATFor(pool)
		}
		if rs, err := ParseText(s); err == nil {
			_ = rs.SourceNATFor(pool)
		}
	})
}
