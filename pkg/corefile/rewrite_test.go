package corefile

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rewrite whose rules match none of the zone's names leaves their answers to the template
// (proven on the real CoreDNS v1.14.7: checks/config la101_names_lab_test.go); one that matches
// the name, the type, or a rule the model does not read leaves the answer unknown.
func TestRewriteRulesThatMatchNothingLeaveTheZoneStatic(t *testing.T) {
	const tmpl = " template IN A apps.example.com {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n template ANY ANY apps.example.com {\n  rcode NOERROR\n }\n"
	for _, c := range []struct {
		rule, name string
		qtype      uint16
		unknown    string
	}{
		{"rewrite name suffix .apps.corp.internal. .apps.example.com. answer auto", "grafana.apps.example.com", dns.TypeA, ""},
		{"rewrite name prefix graf wiki", "grafana.apps.example.com", dns.TypeA, ""},
		{"rewrite name prefix grafana wiki", "grafana.apps.example.com", dns.TypeA, "rewrites this question"},
		{"rewrite name grafana.apps.example.com wiki.apps.example.com", "grafana.apps.example.com", dns.TypeA, "rewrites this question"},
		{"rewrite stop name regex ^(.*)[.]apps[.]example[.]com[.]$ {1}.x.", "grafana.apps.example.com", dns.TypeA, "rewrites this question"},
		{"rewrite name substring example other", "grafana.apps.example.com", dns.TypeA, "rewrites this question"},
		{"rewrite type MX TXT", "grafana.apps.example.com", dns.TypeA, ""},
		{"rewrite type AAAA A", "grafana.apps.example.com", dns.TypeAAAA, "rewrites this question"},
		{"rewrite continue class CH IN", "grafana.apps.example.com", dns.TypeA, ""},
		{"rewrite edns0 local set 0xffee abcd", "grafana.apps.example.com", dns.TypeA, "is not evaluated by this model"},
		{"rewrite {\n  name exact old.example.net. apps.example.com.\n }", "grafana.apps.example.com", dns.TypeA, ""},
	} {
		cf, err := Parse("x", []byte("apps.example.com:53 {\n "+c.rule+"\n"+tmpl+"}\n"))
		require.NoError(t, err, c.rule)
		o := cf.Query(Question{Name: c.name, Type: c.qtype, Port: "53"})
		if c.unknown == "" {
			assert.True(t, o.Known(), "%s: %s", c.rule, o.Unknown)
			assert.Equal(t, "template", o.By.Name, c.rule)
			continue
		}
		assert.Contains(t, o.Unknown, c.unknown, c.rule)
		assert.Equal(t, "rewrite", o.By.Name, c.rule)
	}
}
