package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// The Corefile fixes of LA101 (the zone's answers) and LA104 (the zone block, the catch-all, the
// "." block). Each changes the file where the block or entry is written (an imported file's own
// ConfigMap key), at the place CoreDNS's order makes right: templates are tried in order, so an
// answer goes after the entries it must not shadow and a catch-all after the entries it must not
// hide. None adds a server block for a zone another block (an import) already defines: CoreDNS
// would refuse to start. The edits themselves are corefile_edit.go's.

// scoped writes `template CLASS TYPE {` of a snippet as `template CLASS TYPE ZONE {` when the
// entry lives in a block that serves more than the zone (the "." block). The zero zone (the
// root, for a template that named ".") leaves the entry zone-less, which in a block means the
// same.
func scoped(snippet string, z zone.Zone, scope bool) string {
	if !scope || z.IsZero() {
		return snippet
	}
	var out []string
	for l := range strings.SplitSeq(snippet, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "template" && f[3] == "{" {
			l = strings.Replace(l, f[2]+" {", f[2]+" "+z.String()+" {", 1)
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// needsScope: a template added to block b must name the zone unless b serves exactly the zone.
func needsScope(b *corefile.ServerBlock, zone string) bool {
	zs := b.Zones()
	return len(zs) != 1 || zs[0] != zone
}

// lastZoneTemplate is the last template entry of b that answers names of zone (in b's file),
// nil when none.
func lastZoneTemplate(b *corefile.ServerBlock, zone string) *corefile.Template {
	var last *corefile.Template
	for i := range b.Templates {
		t := &b.Templates[i]
		if t.File == b.File && covers(t.Zones, zone) && (last == nil || t.EndLine > last.EndLine) {
			last = t
		}
	}
	return last
}

func covers(zones []string, zone string) bool {
	for _, z := range zones {
		if z == zone || (z != "." && strings.HasSuffix(zone, "."+z)) {
			return true
		}
	}
	return false
}

// insertInBlock adds snippet to block b after line `after` (0: after its first line), indented.
func insertInBlock(s *kube.Setup, b *corefile.ServerBlock, after int, snippet, what string) (corefileEdit, bool) {
	f, ok := corefileSource(s, b.File)
	if !ok {
		return corefileEdit{}, false
	}
	if after == 0 {
		after = b.Line
	}
	return insertAfter(f, after, indent(snippet, blockIndent(f, b)), fmt.Sprintf(what+" (after line %d)", after)), true
}

// zoneTemplateAfter adds a template answering A for the zone with the DNS Service's IPv4
// externalIPs, after the zone's last template in the block that takes the query (so a `match`
// entry that falls through reaches it), or, when no block takes it, a zone block.
func zoneTemplateAfter(s *kube.Setup, cf *corefile.Corefile, o corefile.Outcome) corefileEdit {
	if o.Block == nil {
		return addZoneBlock(s, cf, s.ZonePort())
	}
	v4, _ := dnsServiceFamilies(s)
	snippet := scoped(remedy.ZoneTemplate(v4), s.Zone, needsScope(o.Block, s.Zone.FQDN()))
	after := 0
	if t := lastZoneTemplate(o.Block, s.Zone.FQDN()); t != nil {
		after = t.EndLine
	}
	if t := answeringTemplate(o); t != nil && len(t.Match) > 0 && !t.Fallthrough && t.File == o.Block.File {
		// the entry must let the names it does not match go on to the new one
		if e, ok := insertInBlock(s, o.Block, t.EndLine-1, "    fallthrough", "add"); ok {
			f := e.file
			f.Text = e.Text()
			e2 := insertAfter(f, t.EndLine+1, indent(snippet, blockIndent(f, o.Block)), "")
			return corefileEdit{file: e.file, What: fmt.Sprintf("add `fallthrough` to %s and, after it, a template answering every name of the zone", t.Label()),
				Lines: "fallthrough\n" + snippet, text: e2.Text()}
		}
	}
	e, ok := insertInBlock(s, o.Block, after, snippet, "add the zone's A answers in "+o.Block.Label())
	if !ok {
		return addZoneBlock(s, cf, s.ZonePort())
	}
	return e
}

// addZoneBlock appends the seed's zone block to the Corefile. Only proposed when no block of
// any file serves the zone on the port (Query answers REFUSED): never beside an import.
func addZoneBlock(s *kube.Setup, cf *corefile.Corefile, port string) corefileEdit {
	if port == "" {
		port = "53"
		if t := dnsTargetPorts(s); len(t) > 0 {
			port = strconv.Itoa(int(t[0]))
		}
	}
	f, ok := corefileSource(s, "")
	if !ok {
		return corefileEdit{}
	}
	block := remedy.ZoneBlock(s.Zone, port, kubeobj.ExternalAddrs(s.DNSService))
	what := fmt.Sprintf("add the zone's server block at the end (no block of the Corefile or its imports serves %s on port %s)", s.Zone.FQDN(), port)
	if o, owned := kube.OwnerOf(s.ConfigMap); owned && o.Tool == "k3s" {
		if i := slices.IndexFunc(cf.Imports, func(imp corefile.Import) bool { return imp.File == "" && strings.Contains(imp.Pattern, "*") }); i >= 0 {
			what += fmt.Sprintf("; k3s rewrites this ConfigMap, so put the block in the files the Corefile imports (%s) instead", cf.Imports[i].Pattern)
		}
	}
	return appendBlock(f, block, what)
}

// splitFamilies moves the IPv6 addresses written as `IN A` answers into a `template IN AAAA`
// entry after the A one (an IPv6 address in IN A makes CoreDNS SERVFAIL every A query). Other
// answers that are not records are dropped: LA101 names them.
func splitFamilies(s *kube.Setup, t *corefile.Template) (corefileEdit, bool) {
	f, ok := corefileSource(s, t.File)
	if !ok {
		return corefileEdit{}, false
	}
	var v6 []netip.Addr
	var drop []int
	canonical := map[int]netip.Addr{}
	seen := map[int]int{}
	for _, a := range t.Answers {
		seen[a.Line]++
	}
	for _, a := range t.Answers {
		if a.Err == "" {
			continue
		}
		if seen[a.Line] > 1 {
			return corefileEdit{}, false // several answers on one line: not rewritten
		}
		if ip, err := netip.ParseAddr(a.Data); err == nil && ip.Is6() && !ip.Is4In6() {
			v6 = append(v6, ip)
		} else if f := readAddr(a.Data); f.Addr.IsValid() && f.Addr.Is4() {
			canonical[a.Line] = f.Addr // 010.0.10.12: the address meant, written so NewRR reads it
			continue
		}
		drop = append(drop, a.Line)
	}
	text := f.Text
	for line, addr := range canonical {
		g := f
		g.Text = text
		text = replaceLines(g, line, line, fmt.Sprintf("%sanswer \"{{ .Name }} 60 IN A %s\"", indentOf(f.Text, line), addr), "").Text()
	}
	for _, line := range slices.Backward(drop) {
		g := f
		g.Text = text
		text = replaceLines(g, line, line, "", "").Text()
	}
	what := fmt.Sprintf("write the answers of %s that are not A records as A records (or remove them)", t.Label())
	added := ""
	if len(v6) > 0 {
		aaaa := remedy.ZoneTemplate(v6) // IPv6 only: its `template IN AAAA` entry
		added = scoped(aaaa, firstZone(t), t.ExplicitZones)
		g := f
		g.Text = text
		text = insertAfter(g, t.EndLine-len(drop), indent(added, indentOf(f.Text, t.Line)), "").Text()
		what = fmt.Sprintf("move the IPv6 answers of %s into a `template IN AAAA` entry right after it", t.Label())
	}
	return corefileEdit{file: f, What: what, Lines: added, text: text}, true
}

// firstZone is the first zone written on t, zero for the root or none (see scoped): a
// Corefile key that is not a DNS name is never written back into a fix.
func firstZone(t *corefile.Template) zone.Zone {
	if len(t.Zones) == 0 {
		return zone.Zone{}
	}
	z, err := zone.Parse(t.Zones[0])
	if err != nil {
		return zone.Zone{}
	}
	return z
}

// moveAfter moves entry t (a catch-all) to just after entry a.
func moveAfter(s *kube.Setup, t, a *corefile.Template) (corefileEdit, bool) {
	if t.File != a.File || t.EndLine == 0 || a.Line < t.EndLine {
		return corefileEdit{}, false
	}
	f, ok := corefileSource(s, t.File)
	if !ok {
		return corefileEdit{}, false
	}
	ls := lines(f.Text)
	moved := strings.Join(ls[t.Line-1:t.EndLine], "\n")
	cut := replaceLines(f, t.Line, t.EndLine, "", "")
	g := f
	g.Text = cut.Text()
	n := t.EndLine - t.Line + 1
	e := insertAfter(g, a.EndLine-n, moved, "")
	return corefileEdit{file: f, What: fmt.Sprintf("move %s after %s", t.Label(), a.Label()), Lines: strings.TrimSpace(moved), text: e.Text()}, true
}

// addCatchAll adds `template ANY ANY [ZONE] { rcode NOERROR }` after the zone's last template
// (zone-scoped in a block that serves more than the zone: a zone-less catch-all in "." would
// answer every name of the world NODATA).
func addCatchAll(s *kube.Setup, cf *corefile.Corefile) (corefileEdit, bool) {
	b := zoneTemplateBlock(s, cf)
	if b == nil {
		return corefileEdit{}, false
	}
	after := 0
	if t := lastZoneTemplate(b, s.Zone.FQDN()); t != nil {
		after = t.EndLine
	}
	return insertInBlock(s, b, after, scoped(remedy.CatchAll, s.Zone, needsScope(b, s.Zone.FQDN())), "add after the zone's templates")
}

// zoneTemplateBlock is the block whose templates answer the zone's A queries.
func zoneTemplateBlock(s *kube.Setup, cf *corefile.Corefile) *corefile.ServerBlock {
	if o := s.ZoneAnswers.A; o.Block != nil {
		return o.Block
	}
	if bs := cf.BlocksServing(s.Zone.FQDN(), s.ZonePort()); len(bs) > 0 {
		return bs[0]
	}
	return nil
}

// rewriteRcode writes the catch-all's rcode as NOERROR.
func rewriteRcode(s *kube.Setup, t *corefile.Template) (corefileEdit, bool) {
	f, ok := corefileSource(s, t.File)
	if !ok {
		return corefileEdit{}, false
	}
	ls := lines(f.Text)
	for n := t.Line; n <= t.EndLine && n <= len(ls); n++ {
		if fl := strings.Fields(ls[n-1]); len(fl) == 2 && fl[0] == "rcode" {
			return replaceLines(f, n, n, indentOf(f.Text, n)+"rcode NOERROR", fmt.Sprintf("write line %d as", n)), true
		}
	}
	return corefileEdit{}, false
}

// addDotBlock appends a "." block forwarding to the node's resolvers on port.
func addDotBlock(s *kube.Setup, _ *corefile.Corefile, port string) corefileEdit {
	f, ok := corefileSource(s, "")
	if !ok {
		return corefileEdit{}
	}
	return appendBlock(f, remedy.DotBlock(port), "add a \".\" block at the end")
}

// scopeTemplate gives a zone-less template of the "." block the zone.
func scopeTemplate(s *kube.Setup, t *corefile.Template) (corefileEdit, bool) {
	f, ok := corefileSource(s, t.File)
	if !ok || t.ExplicitZones {
		return corefileEdit{}, false
	}
	line := lines(f.Text)[t.Line-1]
	fl := strings.Fields(line)
	if len(fl) < 3 || fl[0] != "template" || (len(fl) == 4 && fl[3] != "{") || len(fl) > 4 {
		return corefileEdit{}, false
	}
	nl := indentOf(f.Text, t.Line) + strings.Join([]string{"template", fl[1], fl[2], s.Zone.String()}, " ")
	if len(fl) == 4 {
		nl += " {"
	}
	return replaceLines(f, t.Line, t.Line, nl, fmt.Sprintf("give the template at line %d the zone: write it as", t.Line)), true
}

// addForward adds `forward . /etc/resolv.conf` at the end of block b.
func addForward(s *kube.Setup, b *corefile.ServerBlock) corefileEdit {
	after := max(b.EndLine-1, b.Line)
	e, _ := insertInBlock(s, b, after, "forward . /etc/resolv.conf", "forward the names outside the zone to the node's resolvers (dnsPolicy Default)")
	return e
}

// addReload adds `reload` to the first block of the Corefile (one is enough: it is process-wide).
func addReload(s *kube.Setup, cf *corefile.Corefile) (corefileEdit, bool) {
	for i := range cf.Blocks {
		if b := &cf.Blocks[i]; b.File == "" {
			return insertInBlock(s, b, 0, "reload", "add `reload` (process-wide: it reloads every block)")
		}
	}
	return corefileEdit{}, false
}

// zoneAnswersEdit makes the zone's template of rtype (A or AAAA) answer exactly addrs: its
// answer lines are written anew; without an AAAA entry (the catch-all answers AAAA), one is
// added right after the A entry, before the catch-all.
func zoneAnswersEdit(s *kube.Setup, addrs []netip.Addr, rtype string) (corefileEdit, bool) {
	a := answeringTemplate(s.ZoneAnswers.A)
	if a == nil {
		return corefileEdit{}, false
	}
	if a.CatchAll() {
		// A catch-all tried before the A entry answers A with nothing: moving it after the A
		// entry is what lets the zone answer addresses at all (LA104-CATCH-ALL-FIRST).
		for i := range s.ZoneAnswers.A.Block.Templates {
			if t := &s.ZoneAnswers.A.Block.Templates[i]; t.Line > a.Line && t.File == a.File && t.Type == "A" {
				return moveAfter(s, a, t)
			}
		}
		return corefileEdit{}, false
	}
	t := a
	if rtype == "AAAA" {
		t = answeringTemplate(s.ZoneAnswers.AAAA)
		if t == nil || t.CatchAll() || t.Type != "AAAA" {
			return addAAAATemplate(s, a, addrs)
		}
	}
	f, ok := corefileSource(s, t.File)
	if !ok {
		return corefileEdit{}, false
	}
	var answerLines []int
	for _, an := range t.Answers {
		if !slices.Contains(answerLines, an.Line) {
			answerLines = append(answerLines, an.Line)
		}
	}
	ind := indentOf(f.Text, t.Line) + "    "
	if len(answerLines) > 0 {
		ind = indentOf(f.Text, answerLines[0])
	}
	var added []string
	for _, ad := range addrs {
		added = append(added, fmt.Sprintf("%sanswer \"{{ .Name }} 60 IN %s %s\"", ind, rtype, ad))
	}
	text := f.Text
	for _, line := range slices.Backward(answerLines) {
		g := f
		g.Text = text
		text = replaceLines(g, line, line, "", "").Text()
	}
	g := f
	g.Text = text
	e := insertAfter(g, t.Line, strings.Join(added, "\n"), "")
	return corefileEdit{file: f, What: fmt.Sprintf("make %s answer exactly", t.Label()), Lines: strings.TrimSpace(strings.Join(added, "\n")), text: e.Text()}, true
}

// addAAAATemplate adds `template IN AAAA` with addrs right after the A entry a.
func addAAAATemplate(s *kube.Setup, a *corefile.Template, addrs []netip.Addr) (corefileEdit, bool) {
	f, ok := corefileSource(s, a.File)
	if !ok || a.EndLine == 0 {
		return corefileEdit{}, false
	}
	snippet := scoped(remedy.ZoneTemplate(addrs), firstZone(a), a.ExplicitZones)
	return insertAfter(f, a.EndLine, indent(snippet, indentOf(f.Text, a.Line)), "add after "+a.Label()), true
}
