package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// zoneNames are the names LA104 asks the query model: the apex, a label nobody created and
// the probe host.
func zoneNames(s *kube.Setup) []string {
	names := []string{s.Zone.FQDN(), "lanaccess-zone-probe." + s.Zone.FQDN()}
	if h := dns.Fqdn(strings.ToLower(s.ProbeHost.Name)); s.ProbeHost.Name != "" && s.Zone.Contains(h) && !contains(names, h) {
		names = append(names, h)
	}
	return names
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// zoneAsk is one question and what CoreDNS does with it.
type zoneAsk struct {
	name string
	o    corefile.Outcome
}

// group gathers the names that get the same outcome, for one finding each.
func group(cf *corefile.Corefile, names []string, qtype uint16, port string) [][]zoneAsk {
	var out [][]zoneAsk
	for _, n := range names {
		o := cf.Query(corefile.Question{Name: n, Type: qtype, Port: port})
		placed := false
		for i := range out {
			if out[i][0].o.Describe() == o.Describe() {
				out[i] = append(out[i], zoneAsk{n, o})
				placed = true
			}
		}
		if !placed {
			out = append(out, []zoneAsk{{n, o}})
		}
	}
	return out
}

func namesOf(g []zoneAsk) string {
	out := make([]string, 0, len(g))
	for _, a := range g {
		out = append(out, a.name)
	}
	return strings.Join(out, ", ")
}

// zoneFindings judges what CoreDNS answers for names of the zone on port.
func zoneFindings(s *kube.Setup, cf *corefile.Corefile, port string) []engine.Finding {
	names := zoneNames(s)
	out := make([]engine.Finding, 0, 2*len(names))
	aGroups := group(cf, names, dns.TypeA, port)
	answered := askedAnswered(s, cf, port)
	for _, g := range aGroups {
		if answered && !anyAsked(s, g) {
			out = append(out, unaskedFindings(s, g, port)...)
			continue
		}
		out = append(out, aFindings(s, cf, port, g)...)
	}
	for _, g := range group(cf, names, dns.TypeAAAA, port) {
		if o := g[0].o; answered && !anyAsked(s, g) && o.Rcode == dns.RcodeServerFailure && o.By != nil && o.By.Name == "hosts" {
			continue // LA104-UNLISTED-SERVFAIL says it for A; a catch-all template would shadow hosts
		}
		out = append(out, aaaaFindings(s, cf, g)...)
	}
	return out
}

func outcomeEvidence(g []zoneAsk, port string, qtype uint16) map[string]any {
	return map[string]any{"port": port, "type": dns.TypeToString[qtype], "names": namesOf(g), "outcome": g[0].o.Describe()}
}

// findingObject names the ConfigMap of the file a plugin is written in.
func findingObject(s *kube.Setup, file string) string {
	if f, ok := corefileSource(s, file); ok {
		return kubeobj.ConfigMapRef(f.CM)
	}
	return kubeobj.ConfigMapRef(s.ConfigMap)
}

func aFindings(s *kube.Setup, cf *corefile.Corefile, port string, g []zoneAsk) []engine.Finding {
	o := g[0].o
	ev := outcomeEvidence(g, port, dns.TypeA)
	obj := kubeobj.ConfigMapRef(s.ConfigMap)
	if o.By != nil {
		obj = findingObject(s, o.By.File)
	}
	switch {
	case o.Block == nil && o.Known():
		if len(cf.BlocksServing(s.Zone.FQDN(), "")) > 0 || len(templateBlocks(cf, s.Zone.FQDN())) > 0 {
			return nil // served on another port: portFindings says so
		}
		return []engine.Finding{{Code: "LA104-NO-ZONE-BLOCK", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message:     fmt.Sprintf("no server block serves the zone %s on port %s: CoreDNS answers REFUSED to %s", s.Zone.FQDN(), port, namesOf(g)),
			Remediation: addZoneBlock(s, cf, port).Remediation()}}
	case o.By != nil && o.By.Name == "file" && o.Known():
		return []engine.Finding{{Code: "LA104-ZONE-FILE", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("%s answers A for %s from a zone file (%s), read from the ConfigMap the pods mount: %s (LA101 compares the addresses)", o.Block.Label(), namesOf(g), o.By.Where(), o.Describe())}}
	case o.By != nil && o.By.Name == "file":
		return []engine.Finding{{Code: "LA104-ZONE-FILE", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("%s answers A for %s from a zone file (%s) rather than a template: %s; LA301 asks them live", o.Block.Label(), namesOf(g), o.By.Where(), o.Unknown)}}
	case o.Rcode == dns.RcodeServerFailure && o.By != nil && o.By.Name == "hosts":
		return []engine.Finding{hostsServfail(s, cf, g, ev, obj)}
	case !o.Known():
		// never a zone block added beside an import nobody can read: it may define the zone
		return []engine.Finding{{Code: "LA104-CANNOT-TELL", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("what CoreDNS answers to A for %s cannot be told from the configuration: %s", namesOf(g), o.Unknown)}}
	case o.Forwarded && len(zoneBlocks(cf, s.Zone.FQDN())) == 0:
		return []engine.Finding{{Code: "LA104-NO-ZONE-BLOCK", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message:     fmt.Sprintf("no server block serves the zone %s on port %s: its names go to %s and are %s", s.Zone.FQDN(), port, o.Block.Label(), o.Describe()),
			Remediation: addZoneBlock(s, cf, port).Remediation()}}
	case o.Forwarded:
		return []engine.Finding{{Code: "LA104-A-FORWARDED", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message:     fmt.Sprintf("A queries for %s are not answered by the zone's templates but %s: workstations get the public answer (the VPN address), not the node addresses", namesOf(g), o.Describe()),
			Remediation: zoneTemplateAfter(s, cf, o).Remediation()}}
	case o.Rcode == dns.RcodeServerFailure && o.By != nil && o.By.Name == "template":
		return []engine.Finding{templateServfail(s, cf, g, ev, obj)}
	case o.Rcode == dns.RcodeServerFailure:
		return []engine.Finding{{Code: "LA104-NO-TEMPLATE-A", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message:     fmt.Sprintf("%s has no template that answers A for %s: no plugin answers and CoreDNS returns SERVFAIL", o.Block.Label(), namesOf(g)),
			Remediation: zoneTemplateAfter(s, cf, o).Remediation()}}
	case o.Rcode != dns.RcodeSuccess:
		return []engine.Finding{{Code: "LA104-A-SERVFAIL", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message:     fmt.Sprintf("A queries for %s get %s from %s: workstations get no address", namesOf(g), dns.RcodeToString[o.Rcode], o.By.Where()),
			Remediation: remedy.EditConfigMap(s.ConfigMap.Namespace, s.ConfigMap.Name) + "   " + remedy.Comment(fmt.Sprintf("the template at %s (the fix cannot be proven before it is written)", o.By.Where()))}}
	case len(o.Records) == 0:
		return []engine.Finding{emptyA(s, cf, g, ev, obj)}
	}
	return answerFindings(s, g, obj)
}

// askedAnswered reports that every name workstations ask (the probe host, the routed hosts of
// the zone) gets addresses: the zone is then answered name by name (a template gated by
// `match`, hosts entries), and the names nobody asks are judged by what they break.
func askedAnswered(s *kube.Setup, cf *corefile.Corefile, port string) bool {
	asked := s.AskedNames()
	for _, n := range asked {
		if o := cf.Query(corefile.Question{Name: n, Type: dns.TypeA, Port: port}); !o.Known() || len(o.Addrs()) == 0 {
			return false
		}
	}
	return len(asked) > 0
}

func anyAsked(s *kube.Setup, g []zoneAsk) bool {
	asked := s.AskedNames()
	return slices.ContainsFunc(g, func(a zoneAsk) bool { return slices.Contains(asked, a.name) })
}

// unaskedFindings judges what names no route serves (the apex, a label nobody created) get when
// the routed hosts are answered: NODATA routes nothing and breaks nothing (coredns/coredns
// v1.14.7 plugin/template/template.go: a regex that misses falls through to the catch-all), nor
// does a zone file's authoritative NXDOMAIN (plugin/file/lookup.go: a name it does not hold);
// SERVFAIL from hosts (plugin/hosts/hosts.go ServeDNS: an unknown name without fallthrough)
// makes resolvers retry elsewhere, and a host added to the proxy does not resolve until the
// Corefile lists it: a WARN. Anything else is judged as for any name.
func unaskedFindings(s *kube.Setup, g []zoneAsk, port string) []engine.Finding {
	o := g[0].o
	switch {
	case !o.Known(), o.Forwarded:
		return aFindings(s, s.Corefile, port, g)
	case o.NoData(), o.Rcode == dns.RcodeNameError && o.Authoritative && o.RecordsKnown:
		// NODATA, or an authoritative NXDOMAIN (a zone file's name that does not exist, with
		// its SOA): the name exists for nobody, and resolvers do not retry elsewhere
		return nil
	case o.Rcode == dns.RcodeServerFailure && o.By != nil && o.By.Name == "hosts":
		return []engine.Finding{{Code: "LA104-UNLISTED-SERVFAIL", Severity: engine.SeverityWarn, Object: findingObject(s, o.By.File),
			Evidence: outcomeEvidence(g, port, dns.TypeA),
			Message:  fmt.Sprintf("the routed hosts get their addresses, but %s, which %s does not list, get SERVFAIL (no fallthrough): resolvers retry elsewhere, and a host added to the proxy does not resolve until the Corefile lists it", namesOf(g), o.By.Where())}}
	}
	return aFindings(s, s.Corefile, port, g)
}

// hostsServfail: hosts lists none of the names asked and does not fall through (plugin/hosts/
// hosts.go ServeDNS: SERVFAIL, "we don't have a SOA"). With `*.` entries an older CoreDNS reads
// them as literal names (wildcards from v1.14.5, coredns/coredns commit 6805f6f8a0df): the
// message names the version the image runs. The fix is a template answering the zone, which runs
// before hosts in every version (plugin.cfg).
func hostsServfail(s *kube.Setup, cf *corefile.Corefile, g []zoneAsk, ev map[string]any, obj string) engine.Finding {
	o := g[0].o
	msg := fmt.Sprintf("A queries for %s get SERVFAIL: hosts at %s lists none of them and does not fall through", namesOf(g), o.By.Where())
	if b := cf.Build(); b.Stock && !b.AtLeast(1, 14, 5) && hasWildcardEntry(o.By) {
		msg += fmt.Sprintf("; its `*.` entries are wildcards only from CoreDNS v1.14.5, and the image %s runs %s, which reads them as literal names", b.Image, b.Version())
	}
	return engine.Finding{Code: "LA104-A-SERVFAIL", Severity: engine.SeverityFail, Object: obj, Evidence: ev, Message: msg,
		Remediation: zoneTemplateAfter(s, cf, o).Remediation()}
}

// hasWildcardEntry reports an inline hosts entry with a `*.` name.
func hasWildcardEntry(p *corefile.Plugin) bool {
	for _, l := range p.Block {
		for _, a := range l.Args {
			if strings.HasPrefix(a, "*.") {
				return true
			}
		}
	}
	return false
}

// templateBlocks are the blocks with a template entry naming zone.
func templateBlocks(cf *corefile.Corefile, zone string) []*corefile.ServerBlock {
	var out []*corefile.ServerBlock
	for i := range cf.Blocks {
		for _, t := range cf.Blocks[i].Templates {
			if t.ExplicitZones && contains(t.Zones, zone) {
				out = append(out, &cf.Blocks[i])
				break
			}
		}
	}
	return out
}

// answeringTemplate is the template entry an outcome comes from.
func answeringTemplate(o corefile.Outcome) *corefile.Template {
	if o.Block == nil || o.By == nil || o.By.Name != "template" {
		return nil
	}
	for i := range o.Block.Templates {
		t := &o.Block.Templates[i]
		if t.File == o.By.File && t.Line == o.By.Line {
			return t
		}
	}
	return nil
}

// templateServfail: a template matched but CoreDNS could not build its answer (an answer that
// is not a valid record: an IPv6 address in `IN A`), or a `match` missed the name without
// `fallthrough`.
func templateServfail(s *kube.Setup, cf *corefile.Corefile, g []zoneAsk, ev map[string]any, obj string) engine.Finding {
	o := g[0].o
	t := answeringTemplate(o)
	f := engine.Finding{Code: "LA104-A-SERVFAIL", Severity: engine.SeverityFail, Object: obj, Evidence: ev}
	if t == nil {
		f.Message = fmt.Sprintf("A queries for %s get SERVFAIL", namesOf(g))
		return f
	}
	var bad []string
	for _, a := range t.Answers {
		if a.Err != "" {
			bad = append(bad, fmt.Sprintf("line %d %q: %s", a.Line, a.Text, a.Err))
		}
	}
	if len(bad) > 0 {
		f.Message = fmt.Sprintf("A queries for %s get SERVFAIL: CoreDNS builds each answer of %s at query time, and %s; one answer that is not an A record fails them all", namesOf(g), t.Label(), strings.Join(bad, "; "))
		if e, ok := splitFamilies(s, t); ok {
			f.Remediation = e.Remediation()
		}
		return f
	}
	f.Message = fmt.Sprintf("A queries for %s get SERVFAIL: %s matches none of them (match %s) and does not fall through", namesOf(g), t.Label(), strings.Join(t.Match, " "))
	f.Remediation = zoneTemplateAfter(s, cf, o).Remediation()
	return f
}

// emptyA: A gets NOERROR without address: a catch-all tried before the A template, or an A
// template without answers.
func emptyA(s *kube.Setup, cf *corefile.Corefile, g []zoneAsk, ev map[string]any, obj string) engine.Finding {
	o := g[0].o
	t := answeringTemplate(o)
	if t != nil && t.CatchAll() {
		for i := range o.Block.Templates {
			a := &o.Block.Templates[i]
			if a.Line > t.Line && a.File == t.File && a.Matches("IN", "A") && !a.CatchAll() {
				f := engine.Finding{Code: "LA104-CATCH-ALL-FIRST", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
					Message: fmt.Sprintf("%s comes before %s: CoreDNS tries template entries in order, so A queries for %s get an empty answer", t.Label(), a.Label(), namesOf(g))}
				if e, ok := moveAfter(s, t, a); ok {
					f.Remediation = e.Remediation()
				}
				return f
			}
		}
	}
	return engine.Finding{Code: "LA104-TEMPLATE-A-EMPTY", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
		Message:     fmt.Sprintf("A queries for %s get an empty answer (%s): workstations get no address", namesOf(g), o.Describe()),
		Remediation: zoneTemplateAfter(s, cf, o).Remediation()}
}

// answerFindings: the answers are addresses; each should be for the name asked.
func answerFindings(s *kube.Setup, g []zoneAsk, obj string) []engine.Finding {
	t := answeringTemplate(g[0].o)
	if t == nil {
		return nil
	}
	var out []engine.Finding
	for _, a := range t.Answers {
		switch {
		case a.Static && a.Err == "" && !a.OwnerIsQueryName:
			out = append(out, engine.Finding{Code: "LA104-FIXED-OWNER", Severity: engine.SeverityWarn, Object: obj,
				Message:     fmt.Sprintf("Corefile line %d: the answer's owner is fixed (%q) instead of {{ .Name }}: a client asking another name gets a record for a different name and discards it", a.Line, a.Text),
				Evidence:    map[string]any{"line": a.Line, "answer": a.Text},
				Remediation: remedy.EditConfigMap(s.ConfigMap.Namespace, s.ConfigMap.Name) + "   " + remedy.Comment(fmt.Sprintf("line %d: answer \"{{ .Name }} 60 IN A %s\" (the fix cannot be proven before it is written)", a.Line, a.Data))})
		case a.Unread != "":
			out = append(out, engine.Finding{Code: "LA104-CANNOT-TELL", Severity: engine.SeverityWarn, Object: obj,
				Message:  fmt.Sprintf("Corefile line %d: the answer is not read, %s: what CoreDNS answers cannot be told (LA301 asks live)", a.Line, a.Unread),
				Evidence: map[string]any{"line": a.Line, "answer": a.Text}})
		case !a.Static:
			out = append(out, engine.Finding{Code: "LA104-DYNAMIC-ANSWER", Severity: engine.SeverityInfo, Object: obj,
				Message:  fmt.Sprintf("Corefile line %d: the answer depends on the name asked, so its addresses are not compared here (LA301 asks live)", a.Line),
				Evidence: map[string]any{"line": a.Line, "answer": a.Text}})
		}
	}
	return out
}

// aaaaFindings: AAAA for names of the zone gets NODATA or the zone's IPv6 addresses; forwarded,
// it gets the public AAAA; SERVFAIL or NXDOMAIN make clients try elsewhere or drop the name.
func aaaaFindings(s *kube.Setup, cf *corefile.Corefile, g []zoneAsk) []engine.Finding {
	o := g[0].o
	ev := outcomeEvidence(g, "", dns.TypeAAAA)
	obj := kubeobj.ConfigMapRef(s.ConfigMap)
	if o.By != nil {
		obj = findingObject(s, o.By.File)
	}
	switch {
	case o.Block == nil || (o.By != nil && o.By.Name == "file") || len(zoneBlocks(cf, s.Zone.FQDN())) == 0:
		return nil // REFUSED and a missing zone block are the A finding's; zone files are fileZoneFindings'
	case !o.Known():
		return []engine.Finding{{Code: "LA104-CANNOT-TELL", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("what CoreDNS answers to AAAA for %s cannot be told from the configuration: %s", namesOf(g), o.Unknown)}}
	case o.Forwarded || o.Rcode == dns.RcodeServerFailure:
		why := "get SERVFAIL: no plugin answers them, and clients may then ask another resolver, which returns the public address"
		if o.Forwarded {
			why = "are " + o.Describe() + ": clients get the public AAAA (the organisation's address) and, preferring IPv6, connect there"
		}
		f := engine.Finding{Code: "LA104-NO-CATCH-ALL", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("AAAA queries for %s %s; the zone needs `template ANY ANY { rcode NOERROR }` after its A template", namesOf(g), why)}
		if e, ok := addCatchAll(s, cf); ok {
			f.Remediation = e.Remediation()
		}
		return []engine.Finding{f}
	case o.Rcode != dns.RcodeSuccess:
		f := engine.Finding{Code: "LA104-CATCH-ALL-RCODE", Severity: engine.SeverityFail, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("AAAA queries for %s get %s: that tells clients the name does not exist at all (negative caching), instead of NODATA", namesOf(g), dns.RcodeToString[o.Rcode])}
		if t := answeringTemplate(o); t != nil {
			if e, ok := rewriteRcode(s, t); ok {
				f.Remediation = e.Remediation()
			}
		}
		return []engine.Finding{f}
	}
	return nil
}

// outsideFindings: names outside the zone are forwarded on the zone's port.
func outsideFindings(s *kube.Setup, cf *corefile.Corefile, port string) []engine.Finding {
	const outside = "example.org."
	if s.Zone.Contains(outside) {
		return nil
	}
	var out []engine.Finding
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		o := cf.Query(corefile.Question{Name: outside, Type: qt, Port: port})
		ev := map[string]any{"port": port, "name": outside, "type": dns.TypeToString[qt], "outcome": o.Describe()}
		switch {
		case o.Forwarded, !o.Known():
			continue
		case o.Block == nil:
			if qt == dns.TypeA {
				out = append(out, engine.Finding{Code: "LA104-NO-DOT-BLOCK", Severity: engine.SeverityFail, Object: kubeobj.ConfigMapRef(s.ConfigMap), Evidence: ev,
					Message:     fmt.Sprintf("no \".\" block on port %s: names outside the zone get REFUSED, and systemd-resolved sends any query to any DNS server of the link", port),
					Remediation: addDotBlock(s, cf, port).Remediation()})
			}
		case o.By != nil && o.By.Name == "template":
			t := answeringTemplate(o)
			f := engine.Finding{Code: "LA104-ZONELESS-TEMPLATE", Severity: engine.SeverityFail, Object: findingObject(s, o.By.File), Evidence: ev,
				Message: fmt.Sprintf("%s %s answers names outside the zone (%s %s: %s): every such query of a workstation gets it instead of the real answer", o.By.Where(), templateLabel(t), outside, dns.TypeToString[qt], o.Describe())}
			if t != nil {
				if e, ok := scopeTemplate(s, t); ok {
					f.Remediation = e.Remediation()
				}
			}
			out = append(out, f)
		case qt == dns.TypeA:
			out = append(out, engine.Finding{Code: "LA104-DOT-NO-FORWARD", Severity: engine.SeverityFail, Object: kubeobj.ConfigMapRef(s.ConfigMap), Evidence: ev,
				Message:     fmt.Sprintf("%s does not forward (`forward . UPSTREAM`): names outside the zone get %s", o.Block.Label(), o.Describe()),
				Remediation: addForward(s, o.Block).Remediation()})
		}
	}
	return dedupe(out)
}

func templateLabel(t *corefile.Template) string {
	if t == nil {
		return "a template"
	}
	return t.Label()
}

// dedupe drops a finding whose code and message repeat an earlier one.
func dedupe(fs []engine.Finding) []engine.Finding {
	var out []engine.Finding
	for _, f := range fs {
		dup := false
		for _, o := range out {
			dup = dup || (o.Code == f.Code && o.Remediation == f.Remediation)
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

// reloadFindings: reload is process-wide; without it anywhere, ConfigMap edits wait for the
// next pod restart.
func reloadFindings(s *kube.Setup, cf *corefile.Corefile) []engine.Finding {
	if cf.Reloads() || len(cf.Blocks) == 0 {
		return nil
	}
	f := engine.Finding{Code: "LA104-NO-RELOAD", Severity: engine.SeverityWarn, Object: kubeobj.ConfigMapRef(s.ConfigMap),
		Message:  "no server block has `reload` (it is process-wide: one is enough): edits of the ConfigMap take effect only when the pods restart",
		Evidence: map[string]any{"blocks": len(cf.Blocks)}}
	if e, ok := addReload(s, cf); ok {
		f.Remediation = e.Remediation()
	}
	return []engine.Finding{f}
}

// dnsServiceFamilies are the DNS Service's externalIPs split by family.
func dnsServiceFamilies(s *kube.Setup) (v4, v6 []netip.Addr) {
	for _, a := range kubeobj.ExternalAddrs(s.DNSService) {
		if a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	return v4, v6
}
