package corefile

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

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
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestCorefileSeedParsesIntoTwoBlocksWithTheZoneTemplate(t *testing.T) {
	c, err := Parse("seed", loadCorefile(t, "seed.Corefile"))
	require.NoError(t, err)
	require.Len(t, c.Blocks, 2)
	assert.Empty(t, c.Problems)

	zone := c.Blocks[0]
	assert.Equal(t, 1, zone.Line)
	assert.Equal(t, []Address{{Raw: "apps.example.com:1053", Transport: "dns", Zone: "apps.example.com.", Port: "1053"}}, zone.Addresses)
	assert.Equal(t, []string{"errors", "reload", "template", "template"}, pluginNames(zone.Plugins))
	assert.True(t, zone.HasReload())
	require.Len(t, zone.Templates, 2)

	a := zone.Templates[0]
	assert.Equal(t, "IN", a.Class)
	assert.Equal(t, "A", a.Type)
	assert.Equal(t, 4, a.Line)
	assert.Equal(t, []string{"apps.example.com."}, a.Zones)
	assert.Equal(t, addrs(t, "10.0.10.11", "10.0.10.12", "10.0.10.13"), a.Addrs())
	for i, ans := range a.Answers {
		assert.Equal(t, 5+i, ans.Line, "answer %d line", i)
		assert.True(t, ans.Static)
		assert.True(t, ans.OwnerIsQueryName)
		assert.Equal(t, uint32(60), ans.TTL)
		assert.Equal(t, "A", ans.Type)
		assert.Empty(t, ans.Err)
	}
	assert.Equal(t, "10.0.10.12", a.Answers[1].Data)

	catchAll := zone.Templates[1]
	assert.True(t, catchAll.CatchAll())
	assert.True(t, catchAll.NoData())
	assert.Equal(t, "NOERROR", catchAll.Rcode)

	dot := c.Blocks[1]
	assert.Equal(t, 13, dot.Line)
	assert.True(t, dot.Serves(".", "1053"))
	assert.True(t, dot.ForwardsDot())
	assert.Equal(t, []string{"/etc/resolv.conf"}, dot.Forwarders())
	assert.Equal(t, []string{"1053"}, c.Ports())

	assert.Same(t, &c.Blocks[0], c.ZoneBlockWithTemplateA("APPS.example.com"))
	assert.Same(t, &c.Blocks[0], c.ZoneBlockWithTemplateA(""))
	assert.Nil(t, c.ZoneBlockWithTemplateA("other.example.com"))
}

func pluginNames(ps []Plugin) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestCorefileVariantsAreModelledAsCoreDNSReadsThem(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, c *Corefile)
	}{
		{"no-reload.Corefile", func(t *testing.T, c *Corefile) {
			for _, b := range c.Blocks {
				assert.False(t, b.HasReload(), b.Label())
			}
		}},
		{"no-catchall.Corefile", func(t *testing.T, c *Corefile) {
			b := c.ZoneBlockWithTemplateA("apps.example.com")
			require.NotNil(t, b)
			_, ok := b.TemplateFor("IN", "AAAA")
			assert.False(t, ok, "nothing answers AAAA in the zone")
		}},
		{"catchall-first.Corefile", func(t *testing.T, c *Corefile) {
			b := c.ZoneBlockWithTemplateA("apps.example.com")
			require.NotNil(t, b, "the block is still found by its IN A entry")
			first, ok := b.TemplateFor("IN", "A")
			require.True(t, ok)
			assert.True(t, first.CatchAll(), "the catch-all is tried first for A queries")
			assert.Equal(t, 3, first.Line)
		}},
		{"zoneless-any-in-dot.Corefile", func(t *testing.T, c *Corefile) {
			dot := c.BlocksServing(".", "")
			require.Len(t, dot, 1)
			tmpl, ok := dot[0].TemplateFor("IN", "AAAA")
			require.True(t, ok)
			assert.True(t, tmpl.CatchAll())
			assert.False(t, tmpl.ExplicitZones)
			assert.Equal(t, []string{"."}, tmpl.Zones)
		}},
		{"no-dot-block.Corefile", func(t *testing.T, c *Corefile) {
			assert.Empty(t, c.BlocksServing(".", ""))
		}},
		{"file-plugin.Corefile", func(t *testing.T, c *Corefile) {
			assert.Empty(t, c.TemplateABlocks())
			b := c.BlocksServing("apps.example.com.", "1053")
			require.Len(t, b, 1)
			assert.Equal(t, []FileZone{{Line: 4, Path: "/etc/coredns/apps.example.com.zone", Zones: []string{"apps.example.com."}}}, b[0].FileZones())
		}},
		{"bad-answer-ip.Corefile", func(t *testing.T, c *Corefile) {
			b := c.ZoneBlockWithTemplateA("apps.example.com")
			require.NotNil(t, b)
			ans := b.AAnswers()
			require.Len(t, ans, 3)
			assert.Equal(t, "010.0.10.12", ans[1].Data, "the address is kept as written")
			assert.False(t, ans[1].Addr.IsValid())
			assert.NotEmpty(t, ans[1].Err)
			require.Len(t, c.Problems, 1)
			assert.Equal(t, 5, c.Problems[0].Line)
			assert.Contains(t, c.Problems[0].Message, "010.0.10.12")
		}},
		{"k3s-imports.Corefile", func(t *testing.T, c *Corefile) {
			assert.Equal(t, []Import{
				{Line: 20, Pattern: "/etc/coredns/custom/*.override"},
				{Line: 22, Pattern: "/etc/coredns/custom/*.server"},
			}, c.Imports, "file imports are recorded, not read from this machine")
			require.Len(t, c.Blocks, 1)
			k := c.Blocks[0].PluginsNamed("kubernetes")
			require.Len(t, k, 1)
			assert.Equal(t, []string{"cluster.local", "in-addr.arpa", "ip6.arpa"}, k[0].Args)
			assert.Equal(t, []Line{
				{Name: "pods", Line: 6, Args: []string{"insecure"}},
				{Name: "fallthrough", Line: 7, Args: []string{"in-addr.arpa", "ip6.arpa"}},
			}, k[0].Block)
			assert.Equal(t, []string{"53"}, c.Ports())
		}},
		{"snippets-and-env.Corefile", func(t *testing.T, c *Corefile) {
			require.Len(t, c.Blocks, 1, "the snippet is not a server block")
			b := c.Blocks[0]
			assert.Equal(t, 5, b.Line)
			assert.Equal(t, "{$DNS_PORT}", b.Addresses[0].Port, "placeholders belong to the pod and stay as written")
			assert.True(t, b.HasReload(), "snippet imports are expanded")
			require.Len(t, b.Templates, 1)
			assert.True(t, b.Templates[0].ExplicitZones)
			assert.Equal(t, `{{ .Name }} {$TTL} IN A 10.0.10.11`, b.Templates[0].Answers[0].Text)
			assert.Empty(t, c.Imports)
		}},
		{"swallowed-block.Corefile", func(t *testing.T, c *Corefile) {
			require.Len(t, c.Blocks, 1, "the '.' block was read as a directive of the zone block")
			require.Len(t, c.Problems, 1)
			assert.Equal(t, 7, c.Problems[0].Line)
			assert.Contains(t, c.Problems[0].Message, `unknown directive ".:1053"`)
			assert.Contains(t, c.Problems[0].Message, "'}' is probably missing")
		}},
		{"lowercase-class.Corefile", func(t *testing.T, c *Corefile) {
			require.Len(t, c.Problems, 2)
			assert.Equal(t, 3, c.Problems[0].Line)
			assert.Contains(t, c.Problems[0].Message, `invalid query class "in"`)
			assert.Empty(t, c.TemplateABlocks(), "CoreDNS would refuse this entry")
		}},
		{"dynamic-answer.Corefile", func(t *testing.T, c *Corefile) {
			b := c.ZoneBlockWithTemplateA("apps.example.com")
			require.NotNil(t, b)
			require.Len(t, b.AAnswers(), 1)
			assert.False(t, b.AAnswers()[0].Static, "answers that depend on the query are not judged")
			assert.Empty(t, b.Templates[0].Addrs())
			assert.Empty(t, c.Problems)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Setenv("DNS_PORT", "5353")
			t.Setenv("TTL", "1")
			c, err := Parse(tt.file, loadCorefile(t, tt.file))
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestCorefileSyntaxErrorNamesTheLine(t *testing.T) {
	_, err := Parse("ConfigMap lan-dns/lan-dns", loadCorefile(t, "unclosed-brace.Corefile"))
	require.Error(t, err)
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, 8, pe.Line)
	assert.Contains(t, err.Error(), "ConfigMap lan-dns/lan-dns line 8:")
}

func TestCorefileErrorsAfterADroppedImportStillNameTheUsersLine(t *testing.T) {
	src := "import /etc/passwd\n\n. {\n  forward . 1.1.1.1\n"
	_, err := Parse("x", []byte(src))
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "got %v", err)
	assert.Equal(t, 4, pe.Line)
}

func TestCorefileServerBlockKeysAreNormalisedLikeCoreDNS(t *testing.T) {
	tests := []struct {
		key     string
		want    Address
		wantErr string
	}{
		{key: "Apps.Example.com", want: Address{Raw: "Apps.Example.com", Transport: "dns", Zone: "apps.example.com.", Port: "53"}},
		{key: ".:1053", want: Address{Raw: ".:1053", Transport: "dns", Zone: ".", Port: "1053"}},
		{key: "tls://example.org", want: Address{Raw: "tls://example.org", Transport: "tls", Zone: "example.org.", Port: "853"}},
		{key: "10.0.10.0/24", want: Address{Raw: "10.0.10.0/24", Transport: "dns", Zone: "10.0.10.in-addr.arpa.", Port: "53"}},
		{key: "example.org:", wantErr: "expecting a port"},
		{key: "example.org:70000", wantErr: "out of range"},
		{key: "ftp://example.org", wantErr: "unknown transport"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := ParseAddress(tt.key)
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

func TestCorefileZoneFileSerialIsReadOrTheLineNamed(t *testing.T) {
	serial, err := ZoneFileSerial("apps.example.com", "db.apps", "$TTL 60\n@ IN SOA ns hostmaster 2024010101 7200 3600 1209600 60\n@ IN A 10.0.10.11\n")
	require.NoError(t, err)
	assert.Equal(t, uint32(2024010101), serial)

	_, err = ZoneFileSerial("apps.example.com", "db.apps", "@ IN A 10.0.10.11\n@ IN SOA ns hostmaster notanumber 1 1 1 1\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line: 2")

	_, err = ZoneFileSerial("apps.example.com", "db.apps", "@ IN A 10.0.10.11\n")
	assert.ErrorContains(t, err, "no SOA")
}
