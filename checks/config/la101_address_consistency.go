package checks

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// AddressConsistency is LA101: the proxy's externalIPs, the DNS Service's externalIPs and the
// zone's A answers are one set of addresses, each written canonically and each the
// InternalIP of exactly one Ready Linux node. A workstation is handed the zone's answers and
// connects to the proxy there; an address outside any of the three sets, or carried by no
// node, is a connection that goes nowhere.
func AddressConsistency(env *Env) engine.Check {
	return engine.Check{
		ID:        "LA101",
		Title:     "Proxy, DNS and zone use the same node addresses",
		DependsOn: []string{"LA001"},
		Run:       func(ctx context.Context) engine.Outcome { return addressConsistency(env) },
	}
}

// addrSource is one of the three lists of addresses.
type addrSource struct {
	Name   string // "proxy", "dns", "zone"
	Title  string // "the proxy Service's externalIPs"
	Object string
	// Fields are where each address is written: "spec.externalIPs[1]", "line 6".
	Fields []string
	Forms  []addrForm
	// Known is false when the list could not be read (the zone of an unparsable Corefile).
	Known bool
}

func (s addrSource) set() []netip.Addr {
	var out []netip.Addr
	for _, f := range s.Forms {
		if f.Addr.IsValid() && !slices.Contains(out, f.Addr) {
			out = append(out, f.Addr)
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

func addressConsistency(env *Env) engine.Outcome {
	if o, stop := noSetup(env); stop {
		return o
	}
	s := env.Setup
	sources := []addrSource{serviceAddrs("proxy", s.ProxyService.Namespace, s.ProxyService.Name, s.ProxyService.Spec.ExternalIPs),
		serviceAddrs("dns", s.DNSService.Namespace, s.DNSService.Name, s.DNSService.Spec.ExternalIPs), zoneAddrs(s)}
	var findings []engine.Finding
	for _, src := range sources {
		findings = append(findings, formFindings(src)...)
	}
	findings = append(findings, setFindings(env, sources)...)
	unread := unreadReason(env, kube.ReadKey("", "nodes", ""))
	if unread == "" {
		findings = append(findings, nodeFindings(env, sources)...)
	}
	if !sources[2].Known {
		why := "the zone's A answers are not known (no readable template IN A; LA104 says why, LA301 asks them live), so only the two Services were compared"
		if unread != "" {
			why = unread + "; " + why
		}
		unread = why
	}
	return partialOutcome(findings, unread)
}

func serviceAddrs(name, ns, svc string, ips []string) addrSource {
	src := addrSource{Name: name, Title: "the " + name + " Service's externalIPs", Object: fmt.Sprintf("Service %s/%s", ns, svc), Known: true}
	if name == "dns" {
		src.Title = "the DNS Service's externalIPs"
	}
	for i, ip := range ips {
		src.Fields = append(src.Fields, fmt.Sprintf("spec.externalIPs[%d]", i))
		src.Forms = append(src.Forms, readAddr(ip))
	}
	return src
}

// zoneAddrs reads the static A answers of the zone's template.
func zoneAddrs(s *kube.Setup) addrSource {
	src := addrSource{Name: "zone", Title: "the zone's A answers", Object: "zone " + s.Zone}
	if s.ConfigMap != nil {
		src.Object = configMapObject(s.ConfigMap)
		if s.Zone != "" {
			src.Object += " (zone " + s.Zone + ")"
		}
	}
	if s.Corefile == nil {
		return src
	}
	b := s.Corefile.ZoneBlockWithTemplateA(s.Zone)
	if b == nil {
		return src
	}
	src.Known = true
	for _, t := range b.Templates {
		if !t.Matches("IN", "A") || t.CatchAll() {
			continue
		}
		for _, a := range t.Answers {
			if !a.Static {
				// The answer depends on the query (.Match, .Remote...): the set is not known.
				src.Known = false
				return src
			}
			if a.Type != "A" {
				continue
			}
			src.Fields = append(src.Fields, fmt.Sprintf("Corefile line %d", a.Line))
			src.Forms = append(src.Forms, answerForm(a))
		}
	}
	return src
}

// answerForm judges the data of an A answer. CoreDNS parses the record at query time: a
// record that does not parse makes every A query of the zone fail.
func answerForm(a corefile.Answer) addrForm {
	f := readAddr(a.Data)
	if a.Err != "" && f.Problem == "" {
		f.Problem = a.Err
	}
	if a.Err != "" {
		f.Canonical = false
	}
	return f
}

func formFindings(src addrSource) []engine.Finding {
	var out []engine.Finding
	for i, f := range src.Forms {
		if f.Problem == "" {
			continue
		}
		sev := engine.SeverityWarn
		msg := fmt.Sprintf("%s %q: %s", src.Fields[i], f.Raw, f.Problem)
		switch {
		case src.Name == "zone" && !f.Canonical:
			// CoreDNS builds the record at query time: one bad answer fails them all.
			sev = engine.SeverityFail
			msg += "; CoreDNS cannot build this A record, so every A query of the zone gets SERVFAIL"
		case !f.Addr.IsValid() || strings.HasPrefix(f.Problem, "not a unicast"):
			sev = engine.SeverityFail
		case strings.HasPrefix(f.Problem, "leading zeros"):
			msg += fmt.Sprintf(" (Kubernetes reads %s, but inet_aton-based tools read the octets as octal)", f.Addr)
		}
		out = append(out, engine.Finding{
			Severity: sev, Object: src.Object, Message: msg,
			Evidence:    map[string]any{"field": src.Fields[i], "value": f.Raw, "canonical": canonicalOrEmpty(f)},
			Remediation: formRemediation(src, i, f),
		})
	}
	return out
}

func canonicalOrEmpty(f addrForm) string {
	if f.Addr.IsValid() {
		return f.Addr.String()
	}
	return ""
}

func formRemediation(src addrSource, i int, f addrForm) string {
	if src.Name == "zone" {
		if f.Addr.IsValid() {
			return fmt.Sprintf("# %s:\nanswer \"{{ .Name }} 60 IN A %s\"", src.Fields[i], f.Addr)
		}
		return fmt.Sprintf("# %s: write a node's InternalIP (kubectl get nodes -o wide)", src.Fields[i])
	}
	ns, name := splitObject(src.Object)
	value := `"` + f.Addr.String() + `"`
	if !f.Addr.IsValid() {
		return fmt.Sprintf("kubectl -n %s patch service %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/spec/externalIPs/%d\"}]'", ns, name, i)
	}
	return fmt.Sprintf("kubectl -n %s patch service %s --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/externalIPs/%d\",\"value\":%s}]'", ns, name, i, value)
}

// splitObject reads "Service ns/name".
func splitObject(object string) (string, string) {
	ref := object[strings.LastIndex(object, " ")+1:]
	ns, name, _ := strings.Cut(ref, "/")
	return ns, name
}

// setFindings compares the three sets: each list that differs from the reference (the set
// two lists agree on, else the proxy's) is a FAIL with the three-way diff as evidence.
func setFindings(env *Env, sources []addrSource) []engine.Finding {
	known := []addrSource{}
	for _, s := range sources {
		if s.Known {
			known = append(known, s)
		}
	}
	ref := known[0].set()
	for i := 0; i < len(known); i++ {
		for j := i + 1; j < len(known); j++ {
			if slices.Equal(known[i].set(), known[j].set()) {
				ref = known[i].set()
			}
		}
	}
	diff := threeWayDiff(known)
	var out []engine.Finding
	for _, s := range known {
		got := s.set()
		if slices.Equal(got, ref) {
			continue
		}
		missing, extra := setMinus(ref, got), setMinus(got, ref)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "lacks "+addrList(missing))
		}
		if len(extra) > 0 {
			parts = append(parts, "has "+addrList(extra)+" that the others do not")
		}
		ev := map[string]any{"reference": addrStrings(ref), "diff": diff}
		for _, k := range known {
			ev[k.Name] = addrStrings(k.set())
		}
		out = append(out, engine.Finding{
			Severity:    engine.SeverityFail,
			Object:      s.Object,
			Message:     fmt.Sprintf("%s differ from the others: %s; workstations are sent to addresses where nothing answers, or never to some", s.Title, strings.Join(parts, " and ")),
			Evidence:    ev,
			Remediation: setRemediation(env, s, ref),
		})
	}
	return out
}

// threeWayDiff is one line per address: "10.0.10.13: proxy yes, dns no, zone yes".
func threeWayDiff(sources []addrSource) []string {
	var all []netip.Addr
	for _, s := range sources {
		for _, a := range s.set() {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	slices.SortFunc(all, func(a, b netip.Addr) int { return a.Compare(b) })
	var lines []string
	for _, a := range all {
		var cols []string
		for _, s := range sources {
			mark := "no"
			if slices.Contains(s.set(), a) {
				mark = "yes"
			}
			cols = append(cols, s.Name+" "+mark)
		}
		lines = append(lines, a.String()+": "+strings.Join(cols, ", "))
	}
	return lines
}

func setRemediation(env *Env, s addrSource, ref []netip.Addr) string {
	if s.Name == "zone" {
		var b strings.Builder
		fmt.Fprintf(&b, "kubectl -n %s edit configmap %s\n# the zone's template must answer exactly:\ntemplate IN A {\n", env.Setup.ConfigMap.Namespace, env.Setup.ConfigMap.Name)
		for _, a := range ref {
			fmt.Fprintf(&b, "    answer \"{{ .Name }} 60 IN A %s\"\n", a)
		}
		b.WriteString("}")
		return b.String()
	}
	ns, name := splitObject(s.Object)
	quoted := make([]string, 0, len(ref))
	for _, a := range ref {
		quoted = append(quoted, `"`+a.String()+`"`)
	}
	return fmt.Sprintf("kubectl -n %s patch service %s --type=merge -p '{\"spec\":{\"externalIPs\":[%s]}}'", ns, name, strings.Join(quoted, ","))
}

// nodeFindings checks that every address is the InternalIP of exactly one Ready Linux node.
func nodeFindings(env *Env, sources []addrSource) []engine.Finding {
	var all []netip.Addr
	for _, s := range sources {
		for _, a := range s.set() {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	slices.SortFunc(all, func(a, b netip.Addr) int { return a.Compare(b) })
	var out []engine.Finding
	for _, a := range all {
		nodes := nodesWithInternalIP(env.Setup.Nodes, a)
		fail := func(object, msg string, ev map[string]any) {
			ev["address"] = a.String()
			out = append(out, engine.Finding{Severity: engine.SeverityFail, Object: object, Message: msg, Evidence: ev,
				Remediation: fmt.Sprintf("kubectl get nodes -o wide   # pick the InternalIPs of Ready Linux nodes\n# then remove %s from both Services' externalIPs and from the zone's template answers", a)})
		}
		switch {
		case len(nodes) == 0:
			fail(a.String(), fmt.Sprintf("%s is the InternalIP of no node: nothing routes it to a node, so nothing answers there", a), map[string]any{"nodes": nodeInternalIPs(env)})
		case len(nodes) > 1:
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			fail(a.String(), fmt.Sprintf("%s is the InternalIP of %d nodes (%s): the LAN cannot route it to one of them reliably", a, len(nodes), strings.Join(names, ", ")), map[string]any{"nodes": names})
		case !nodeIsReady(nodes[0]):
			fail(fmt.Sprintf("%s (%s)", nodes[0].Name, a), fmt.Sprintf("node %s, which carries %s, is not Ready: connections to this address fail", nodes[0].Name, a), map[string]any{"node": nodes[0].Name})
		case nodeOS(nodes[0]) != "linux":
			fail(fmt.Sprintf("%s (%s)", nodes[0].Name, a), fmt.Sprintf("node %s, which carries %s, runs %q, not Linux: the setup relies on Linux kube-proxy capturing the externalIPs", nodes[0].Name, a, nodeOS(nodes[0])), map[string]any{"node": nodes[0].Name, "os": nodeOS(nodes[0])})
		}
	}
	return out
}

func nodeInternalIPs(env *Env) map[string]string {
	out := map[string]string{}
	for _, n := range env.Setup.Nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				out[n.Name] = a.Address
			}
		}
	}
	return out
}

func setMinus(a, b []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

func addrList(addrs []netip.Addr) string { return strings.Join(addrStrings(addrs), ", ") }
