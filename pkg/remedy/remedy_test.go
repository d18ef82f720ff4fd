package remedy

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestZoneTemplateKeepsEachFamilyInItsOwnBlock(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("fd00:10::11")
	both := ZoneTemplate([]netip.Addr{v4, v6})
	assert.Equal(t, "template IN A {\n    answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n}\ntemplate IN AAAA {\n    answer \"{{ .Name }} 60 IN AAAA fd00:10::11\"\n}", both)
	assert.NotContains(t, ZoneTemplate([]netip.Addr{v6}), "IN A {", "an empty A template would answer every A query empty")
}

func TestQuoteLeavesPlainWordsAndQuotesTheRest(t *testing.T) {
	for in, want := range map[string]string{
		"traefik":             "traefik",
		"--verb=list":         "--verb=list",
		"~apps.example.com":   "'~apps.example.com'",
		"=cmd":                "'=cmd'",
		"0;id>x;.example.com": "'0;id>x;.example.com'",
		"it's":                `"it's"`,
		"":                    "''",
	} {
		assert.Equal(t, want, Quote(in), in)
	}
	assert.Equal(t, "'it''s'", PowerShellQuote("it's"))
	assert.Equal(t, "'a\u2019\u2019b'", PowerShellQuote("a\u2019b"))
}
