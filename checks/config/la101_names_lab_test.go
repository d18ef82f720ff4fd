//go:build lab

package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// The zone answered name by name (issue 22): a zone file of the mounted ConfigMap, hosts inline
// entries and wildcards, a template gated by match. For each name the differential questions
// ask (the apex, a label nobody created, the name below), the model must give the real CoreDNS
// v1.14.7's answer: rcode, records, authority section and aa flag (differ).
func TestTheRealCoreDNSAnswersTheZoneNameByNameAsTheModelSays(t *testing.T) {
	bin := realCoreDNS(t)
	const zoneFile = "$ORIGIN apps.example.com.\n" +
		"@ 60 IN SOA ns hostmaster 1 7200 3600 1209600 60\n@ 60 IN NS ns\nns 60 IN A 10.0.10.11\n" +
		"grafana 60 IN A 10.0.10.11\ngrafana 60 IN A 10.0.10.12\n*.web 60 IN A 10.0.10.12\nx.ent 60 IN A 10.0.10.13\n" +
		"*.wild 60 IN AAAA fd00:10::11\ncn 60 IN CNAME cn2\ncn2 60 IN CNAME grafana\n*.cw 60 IN CNAME ns\n"
	fileConf := "apps.example.com:1053 {\n file /etc/coredns/db.apps.example.com\n}\n"
	fallConf := "apps.example.com:1053 {\n file /etc/coredns/db.apps.example.com {\n  fallthrough\n }\n template ANY ANY {\n  rcode NOERROR\n }\n}\n"
	hostsConf := "apps.example.com:1053 {\n hosts {\n  10.0.10.11 grafana.apps.example.com\n  10.0.10.12 *.apps.example.com\n  ttl 30\n }\n}\n"
	matchConf := "apps.example.com:1053 {\n template IN A apps.example.com {\n  match \"^(grafana|wiki)[.]apps[.]example[.]com[.]$\"\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n  fallthrough\n }\n template ANY ANY {\n  rcode NOERROR\n }\n}\n"
	// rewrite rules that match none of the names asked leave the zone's answers to the plugins
	// after them (plugin/rewrite: RewriteIgnored); a prefix is made fully qualified before it is
	// compared ("graf" is "graf.", which grafana.apps.example.com. does not begin with).
	tmpl := " template IN A apps.example.com {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n template ANY ANY apps.example.com {\n  rcode NOERROR\n }\n"
	rewriteZoneConf := "apps.example.com:1053 {\n rewrite name suffix .apps.corp.internal. .apps.example.com. answer auto\n rewrite continue class CH IN\n rewrite type MX TXT\n" + tmpl + "}\n.:1053 {\n forward . /etc/resolv.conf\n}\n"
	rewriteDotConf := ".:1053 {\n rewrite name regex (.*)\\.lan\\.internal\\.$ {1}.apps.example.com.\n rewrite name prefix graf wiki\n rewrite stop name exact old.example.net. apps.example.com.\n" + tmpl + " forward . /etc/resolv.conf\n}\n"
	for _, c := range []struct{ name, conf, host string }{
		{"rewrite: a suffix outside the zone, class and type rules of other classes and types", rewriteZoneConf, "grafana.apps.example.com"},
		{"rewrite: regex, prefix and exact rules in the . block that serves the zone", rewriteDotConf, "grafana.apps.example.com"},
		{"file: the name's own records", fileConf, "grafana.apps.example.com"},
		{"file: a wildcard one label below", fileConf, "a.web.apps.example.com"},
		{"file: an empty non-terminal", fileConf, "ent.apps.example.com"},
		{"file: no such name", fileConf, "nope.apps.example.com"},
		{"file: a wildcard of another type", fileConf, "b.wild.apps.example.com"},
		{"file: two labels below a wildcard", fileConf, "a.b.web.apps.example.com"},
		{"file: a CNAME chain inside the zone", fileConf, "cn.apps.example.com"},
		{"file: a wildcard CNAME", fileConf, "a.cw.apps.example.com"},
		{"file with fallthrough: no such name", fallConf, "nope.apps.example.com"},
		{"file with fallthrough: an empty non-terminal", fallConf, "ent.apps.example.com"},
		{"hosts: an exact entry before the wildcard", hostsConf, "grafana.apps.example.com"},
		{"hosts: the wildcard", hostsConf, "wiki.apps.example.com"},
		{"hosts: the wildcard matches one label only", hostsConf, "a.b.apps.example.com"},
		{"template match: a routed host", matchConf, "wiki.apps.example.com"},
		{"template match: another label", matchConf, "nope.apps.example.com"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := corefile.NewFiles()
			files.MountVolume("/etc/coredns", map[string]corefile.File{
				"Corefile":            {Content: c.conf, Object: "ConfigMap lan-dns/lan-dns", Key: "Corefile"},
				"db.apps.example.com": {Content: zoneFile, Object: "ConfigMap lan-dns/lan-dns", Key: "db.apps.example.com"},
			})
			// the runner leaves the machine's /etc/hosts to the binary; it holds no name of the zone
			files.MountFile("/etc/hosts", corefile.File{Content: "127.0.0.1\tlocalhost\n", Object: "the kubelet's /etc/hosts", Key: "hosts"})
			run := differ(t, bin, "names", files, "/etc/coredns/Corefile", "apps.example.com", c.host)
			require.True(t, run.Starts, run.Error)
			require.NotEmpty(t, run.Ports)
			assert.GreaterOrEqual(t, len(run.Ports[0].Answers), 10, "A and AAAA of the apex, a label, the probe host, example.org and a cluster name")
		})
	}
}
