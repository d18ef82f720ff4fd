package corefiletest

import (
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// RuleCase is a small configuration that shows one rule CoreDNS enforces when it reads its
// configuration. The unit tests hold the model to Stops; the lab tests hold the real binary
// to it (and compare the model's answers with the binary's when it starts).
type RuleCase struct {
	Name string
	// Files are the pod's files, relative to the ConfigMap volume mounted at /etc/coredns;
	// CoreDNS reads /etc/coredns/Corefile.
	Files map[string]string
	// Stops is part of the error CoreDNS stops with, "" when it starts.
	Stops string
}

// Conf is the -conf path of every rule case.
const Conf = "/etc/coredns/Corefile"

// PodFiles is the rule case's files as a ConfigMap volume at /etc/coredns.
func (r RuleCase) PodFiles() *corefile.Files {
	f := corefile.NewFiles()
	m := map[string]corefile.File{}
	for k, v := range r.Files {
		m[k] = corefile.File{Content: v, Object: "ConfigMap rules/coredns", Key: strings.ReplaceAll(k, "/", "_")}
	}
	f.MountVolume("/etc/coredns", m)
	return f
}

func corefileOnly(text string) map[string]string { return map[string]string{"Corefile": text} }

const zoneA = "a:53 {\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n template ANY ANY {\n  rcode NOERROR\n }\n}\n"

// Rules are the start-up rules this model follows, each read in CoreDNS v1.14.7 or caddy.
var Rules = []RuleCase{
	// plugin/reload/setup.go: minInterval 2s, minJitter 1s, durations are Go durations.
	{"reload interval under 2s", corefileOnly("a:53 {\n reload 1s\n whoami\n}"), "plugin/reload: interval value must be greater or equal to 2s"},
	{"reload interval of 2s", corefileOnly("a:53 {\n reload 2s\n whoami\n}"), ""},
	{"reload interval without unit", corefileOnly("a:53 {\n reload 30\n whoami\n}"), `plugin/reload: time: missing unit in duration "30"`},
	{"reload jitter under 1s", corefileOnly("a:53 {\n reload 10s 500ms\n whoami\n}"), "plugin/reload: jitter value must be 0 or greater or equal to 1s"},
	{"reload jitter 0", corefileOnly("a:53 {\n reload 10s 0s\n whoami\n}"), ""},
	// plugin/template/setup.go templateParse: class and type as dns.StringToClass/StringToType.
	{"template class in lower case", corefileOnly("a:53 {\n template in a\n}"), "plugin/template: "},
	{"template type in lower case", corefileOnly("a:53 {\n template IN a\n}"), "invalid RR class a"},
	{"template unknown rcode", corefileOnly("a:53 {\n template IN A {\n  rcode NOTHING\n }\n}"), "unknown rcode NOTHING"},
	{"template answer that is not a template", corefileOnly("a:53 {\n template IN A {\n  answer \"{{ .Name \"\n }\n}"), "could not compile template"},
	{"template match that does not compile", corefileOnly("a:53 {\n template IN A {\n  match (\n }\n}"), "could not parse regex: ("},
	{"template unknown property", corefileOnly("a:53 {\n template IN A {\n  nope\n }\n}"), "Wrong argument count or unexpected line ending after 'nope'"},
	{"template IPv6 address in IN A starts", corefileOnly("a:53 {\n template IN A {\n  answer \"{{ .Name }} 60 IN A fd00:10::11\"\n }\n}"), ""},
	{"template fallthrough in a catch-all", corefileOnly("a:53 {\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n template ANY ANY {\n  rcode NOERROR\n  fallthrough\n }\n forward . 127.0.0.1\n}"), ""},
	{"template zone-scoped in the . block", corefileOnly(".:53 {\n template IN A a {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n  fallthrough\n }\n forward . 127.0.0.1\n}"), ""},
	{"template match without fallthrough", corefileOnly("a:53 {\n template IN A {\n  match ^ip-(?P<x>[0-9]+)[.]a[.]$\n  answer \"{{ .Name }} 60 IN A 10.0.10.{{ .Group.x }}\"\n }\n}"), ""},
	// plugin/cache, plugin/errors, plugin/health, plugin/forward setups.
	{"cache TTL 0", corefileOnly("a:53 {\n cache 0\n whoami\n}"), "plugin/cache: cache TTL can not be zero or negative: 0"},
	{"cache twice in a block", corefileOnly("a:53 {\n cache\n cache\n whoami\n}"), "plugin/cache: this plugin can only be used once per Server Block"},
	{"errors twice in a block", corefileOnly("a:53 {\n errors\n errors\n whoami\n}"), "plugin/errors: this plugin can only be used once per Server Block"},
	{"health on a port without colon", corefileOnly("a:53 {\n health 8080\n whoami\n}"), "plugin/health: address 8080: missing port in address"},
	{"forward without upstream", corefileOnly("a:53 {\n forward .\n}"), "plugin/forward: "},
	{"forward unknown property", corefileOnly("a:53 {\n forward . 127.0.0.1 {\n  bogus\n }\n}"), "plugin/forward: "},
	{"forward more than 15 upstreams", corefileOnly("a:53 {\n forward . 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7 127.0.0.8 127.0.0.9 127.0.0.10 127.0.0.11 127.0.0.12 127.0.0.13 127.0.0.14 127.0.0.15 127.0.0.16\n}"), "plugin/forward: more than 15 TOs configured: 16"},
	// core/dnsserver/register.go: a zone served twice on a port stops CoreDNS.
	{"a zone defined twice", corefileOnly("a:53 {\n whoami\n}\na:53 {\n whoami\n}"), "cannot serve dns://a.:53 - it is already defined"},
	{"a zone on two ports", corefileOnly("a:53 {\n whoami\n}\na:54 {\n whoami\n}"), ""},
	{"a key ending in a colon", corefileOnly("a: {\n whoami\n}"), `expecting data after last colon: "a:"`},
	{"an unknown directive", corefileOnly("a:53 {\n nosuchplugin\n}"), "Unknown directive 'nosuchplugin'"},
	{"reload only in another block", corefileOnly(zoneA + ".:53 {\n reload\n forward . 127.0.0.1\n}"), ""},
	// health listens with SO_REUSEPORT and ready once per address (uniqAddr): both in two blocks start.
	{"health and ready in two blocks", corefileOnly("a:53 {\n health\n ready\n whoami\n}\nb:53 {\n health\n ready\n whoami\n}"), ""},
	{"a reverse zone key off an octet boundary", corefileOnly("10.0.10.0/23:53 {\n whoami\n}\n11.0.10.in-addr.arpa:53 {\n whoami\n}"), "cannot serve dns://11.0.10.in-addr.arpa.:53 - it is already defined"},
	{"a template zone that is not a domain name is dropped", corefileOnly("a:53 {\n template IN A a:xyz {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n}"), ""},
	// coredns/caddy caddyfile/parse.go doImport.
	{"an import of a missing file", corefileOnly("import /etc/coredns/missing.conf\n"), "File to import not found: /etc/coredns/missing.conf"},
	{"an import glob that matches nothing", corefileOnly("import /etc/coredns/*.server\n" + zoneA), ""},
	{"an import relative to the importing file", map[string]string{"Corefile": "import zone.conf\n", "zone.conf": zoneA}, ""},
	{"an import with two wildcards", corefileOnly("import /etc/*/*.conf\n"), "Glob pattern may only contain one wildcard"},
	{"an import of * in a ConfigMap volume", map[string]string{"Corefile": "import /etc/coredns/*\n"}, "is a directory"},
	{"a file that imports itself", map[string]string{"Corefile": "import /etc/coredns/loop.conf\n", "loop.conf": "import /etc/coredns/loop.conf\n"}, "maximum file import depth (10000) exceeded"},
	{"a zone block imported beside the same zone", map[string]string{"Corefile": zoneA + "import /etc/coredns/custom/*.server\n", "custom/lan.server": zoneA}, "cannot serve dns://a.:53 - it is already defined"},
	// plugin/file/file.go Parse: zp.SetIncludeAllowed(true), relative to the including file
	// (miekg/dns scan.go).
	{"a zone file that $INCLUDEs another file", map[string]string{"Corefile": "a:53 {\n file /etc/coredns/db.a\n}\n", "db.a": "$ORIGIN a.\n@ 60 IN SOA ns host 1 2 3 4 5\n$INCLUDE db.more\n", "db.more": "www 60 IN A 10.0.10.11\n"}, ""},
	{"a zone file that $INCLUDEs a missing file", map[string]string{"Corefile": "a:53 {\n file /etc/coredns/db.a\n}\n", "db.a": "$ORIGIN a.\n@ 60 IN SOA ns host 1 2 3 4 5\n$INCLUDE db.missing\n"}, "failed to open `db.missing'"},
	{"a zone file whose $INCLUDEd file does not parse", map[string]string{"Corefile": "a:53 {\n file /etc/coredns/db.a\n}\n", "db.a": "$ORIGIN a.\n@ 60 IN SOA ns host 1 2 3 4 5\n$INCLUDE db.more\n", "db.more": "www 60 IN A 10.0.10.999\n"}, "failed to parse file"},
	{"an override imported into the . block", map[string]string{"Corefile": ".:53 {\n forward . 127.0.0.1\n import /etc/coredns/custom/*.override\n}\n", "custom/lan.override": "template IN A a {\n answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n}\n"}, ""},
}
