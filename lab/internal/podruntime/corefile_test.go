package podruntime

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const seedCorefile = `apps.example.com:1053 {
    errors
    reload
    template IN A {
        answer "{{ .Name }} 60 IN A 10.0.10.11"
    }
    template ANY ANY {
        rcode NOERROR
    }
}
.:1053 {
    errors
    reload
    cache 30
    forward . /etc/resolv.conf
}
`

func TestBindCorefileAddsOneBindPerServerBlockAndKeepsTheRest(t *testing.T) {
	got := BindCorefile(seedCorefile, "10.244.2.5")
	assert.Equal(t, 2, strings.Count(got, "bind 10.244.2.5"))
	assert.Equal(t, seedCorefile, strings.ReplaceAll(got, "\n    bind 10.244.2.5", ""))
	assert.Contains(t, got, "apps.example.com:1053 {\n    bind 10.244.2.5\n    errors")
}

func TestBindCorefileIgnoresBracesInQuotesCommentsSnippetsAndEnvPlaceholders(t *testing.T) {
	in := "# a comment with { brace\n(snip) {\n    errors\n}\n{$ZONE}:53 {\n    import snip\n    template IN A {\n        answer \"{{ .Name }} 60 IN A 1.2.3.4 }\"\n    }\n}\n"
	got := BindCorefile(in, "10.0.0.1")
	assert.Equal(t, 1, strings.Count(got, "bind 10.0.0.1"), got)
	assert.Contains(t, got, "{$ZONE}:53 {\n    bind 10.0.0.1")
	assert.Contains(t, got, "(snip) {\n    errors")
}

func TestHasDirectiveFindsPluginLinesNotWordsInsideArguments(t *testing.T) {
	assert.True(t, HasDirective(seedCorefile, "reload"))
	assert.False(t, HasDirective(".:53 {\n  # reload\n  forward . reload.example\n}\n", "reload"))
}

func TestPathMapRewritesMountedPathsOnlyAtPathStarts(t *testing.T) {
	pm := PathMap{
		{Container: "/etc/openvpn", Host: "/state/vol/config"},
		{Container: "/etc/openvpn/pki", Host: "/state/vol/pki"},
		{Container: "/etc/resolv.conf", Host: "/state/resolv.conf"},
	}
	in := "ca /etc/openvpn/pki/ca.crt\nconfig /etc/openvpn/openvpn.conf\nforward . /etc/resolv.conf\nx /usr/etc/openvpn/y\n"
	want := "ca /state/vol/pki/ca.crt\nconfig /state/vol/config/openvpn.conf\nforward . /state/resolv.conf\nx /usr/etc/openvpn/y\n"
	assert.Equal(t, want, pm.Rewrite(in))
	_, ok := pm.Resolve("/var/lib/x")
	assert.False(t, ok)
}
