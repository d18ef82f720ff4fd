package valid

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHostname(t *testing.T) {
	for _, ok := range []string{"grafana.apps.example.com", "apps.example.com.", "_dmarc.example.org", "a-b.c1"} {
		assert.NoError(t, Hostname(ok), ok)
	}
	for _, bad := range []string{"", "0;id>x;.apps.example.com", "a'b.example.com", "a b.example.com", "*.apps.example.com", "-a.example.com", "a..b", "a\x1b.com"} {
		assert.Error(t, Hostname(bad), "%q", bad)
	}
}

func TestInterfaceName(t *testing.T) {
	for _, ok := range []string{"eth0", "enp3s0", "tun0", "eth0`x`"} {
		assert.NoError(t, InterfaceName(ok), ok)
	}
	for _, bad := range []string{"", "a/b", "eth0:1", "a b", ".", "..", "averyveryverylongname"} {
		assert.Error(t, InterfaceName(bad), "%q", bad)
	}
}

func FuzzHostname(f *testing.F) {
	for _, s := range []string{"grafana.apps.example.com", "0;id>x;.a", "", "a.b."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Hostname(s) != nil {
			return
		}
		for _, c := range []byte(s) {
			if c <= ' ' || c >= 0x7f || c == ';' || c == '\'' || c == '"' || c == '$' || c == '`' || c == '*' {
				t.Fatalf("accepted %q with %q", s, c)
			}
		}
	})
}
