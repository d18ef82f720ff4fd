package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// AddressConsistency is LA101: the proxy's externalIPs, the DNS Service's externalIPs and the
// zone's A answers are one set of addresses, each written canonically and each the
// InternalIP of exactly one Ready Linux node. A workstation is handed the zone's answers and
// connects to the proxy there; an address outside any of the three sets, or carried by no
// node, is a connection that goes nowhere.
func AddressConsistency(env *Env) engine.Check {
	return check(env, "LA101", addressConsistency)
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
	// Namespace and Svc name the Service of a Service's list.
	Namespace, Svc string
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

func addressConsistency(s *kube.Setup) engine.Outcome {
	sources := []addrSource{serviceAddrs("proxy", s.ProxyService.Namespace, s.ProxyService.Name, s.ProxyService.Spec.ExternalIPs),
		serviceAddrs("dns", s.DNSService.Namespace, s.DNSService.Name, s.DNSService.Spec.ExternalIPs), zoneAddrs(s)}
	var findings []engine.Finding
	for _, src := range sources {
		findings = append(findings, formFindings(src)...)
	}
	findings = append(findings, setFindings(s, sources)...)
	unread := s.UnreadReason(kube.ReadKey("", "nodes", ""))
	if unread == "" {
		findings = append(findings, nodeFindings(s, sources)...)
	}
	if !sources[2].Known {
		why := "the zone's A answers are not known (no readable template IN A; LA104 says why, LA301 asks them live), so only the two Services were compared"
		if unread != "" {
			why = unread + "; " + why
		}
		unread = why
	}
	return engine.Partial("LA101", findings, unread)
}

func serviceAddrs(name, ns, svc string, ips []string) addrSource {
	src := addrSource{Name: name, Title: "the " + name + " Service's externalIPs", Object: kube.Ref("Service", ns, svc), Namespace: ns, Svc: svc, Known: true}
	if name == "dns" {
		src.Title = "the DNS Service's externalIPs"
	}
	for i, ip := range ips {
		src.Fields = append(src.Fields, fmt.Sprintf("spec.externalIPs[%d]", i))
		src.Forms = append(src.Forms, readAddr(ip))
	}
	return src
}

// zoneAddrs reads the zone template's A answers from discovery's model.
func zoneAddrs(s *kube.Setup) addrSource {
	z := s.ZoneAnswers
	src := addrSource{Name: "zone", Title: "the zone's A answers", Object: z.Object, Known: z.Known}
	for _, a := range z.Answers {
		src.Fields = append(src.Fields, fmt.Sprintf("Corefile line %d", a.Line))
		src.Forms = append(src.Forms, answerForm(a))
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
		sev, code := engine.SeverityWarn, "LA101-ADDRESS-NOT-CANONICAL"
		msg := fmt.Sprintf("%s %q: %s", src.Fields[i], f.Raw, f.Problem)
		switch {
		case src.Name == "zone" && !f.Canonical:
			// CoreDNS builds the record at query time: one bad answer fails them all.
			sev, code = engine.SeverityFail, "LA101-ZONE-ANSWER-INVALID"
			msg += "; CoreDNS cannot build this A record, so every A query of the zone gets SERVFAIL"
		case !f.Addr.IsValid() || strings.HasPrefix(f.Problem, "not a unicast"):
			sev, code = engine.SeverityFail, "LA101-ADDRESS-INVALID"
		case strings.HasPrefix(f.Problem, "leading zeros"):
			msg += fmt.Sprintf(" (Kubernetes reads %s, but inet_aton-based tools read the octets as octal)", f.Addr)
		}
		out = append(out, engine.Finding{
			Code: code, Severity: sev, Object: src.Object, Message: msg,
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
	path := fmt.Sprintf("/spec/externalIPs/%d", i)
	if !f.Addr.IsValid() {
		return remedy.JSONPatch(src.Namespace, "service", src.Svc, remedy.PatchOp{Op: "remove", Path: path})
	}
	return remedy.JSONPatch(src.Namespace, "service", src.Svc, remedy.PatchOp{Op: "replace", Path: path, Value: f.Addr.String()})
}

// setFindings compares the three sets: each list that differs from the reference (the set
// two lists agree on, else the proxy's) is a FAIL with the three-way diff as evidence.
func setFindings(s *kube.Setup, sources []addrSource) []engine.Finding {
	known := []addrSource{}
	for _, src := range sources {
		if src.Known {
			known = append(known, src)
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
	for _, src := range known {
		got := src.set()
		if slices.Equal(got, ref) {
			continue
		}
		ev := map[string]any{"reference": addrStrings(ref), "diff": diff}
		for _, k := range known {
			ev[k.Name] = addrStrings(k.set())
		}
		missing, extra := setMinus(ref, got), setMinus(got, ref)
		codes := setCodes[src.Name]
		if len(missing) > 0 {
			out = append(out, engine.Finding{
				Code: codes[0], Severity: engine.SeverityFail, Object: src.Object, Evidence: ev,
				Message:     fmt.Sprintf("%s lack %s, which the others have: workstations are never sent there, or are sent where nothing answers", src.Title, addrList(missing)),
				Remediation: setRemediation(s, src, ref),
			})
		}
		if len(extra) > 0 {
			out = append(out, engine.Finding{
				Code: codes[1], Severity: engine.SeverityFail, Object: src.Object, Evidence: ev,
				Message:     fmt.Sprintf("%s have %s, which the others do not: workstations are sent to addresses where nothing answers, or never to some", src.Title, addrList(extra)),
				Remediation: setRemediation(s, src, ref),
			})
		}
	}
	return out
}

// setCodes are the codes of a list that lacks addresses, and of one that has extra ones.
var setCodes = map[string][2]string{
	"proxy": {"LA101-PROXY-MISSING", "LA101-PROXY-EXTRA"},
	"dns":   {"LA101-DNS-MISSING", "LA101-DNS-EXTRA"},
	"zone":  {"LA101-ZONE-MISSING", "LA101-ZONE-EXTRA"},
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

func setRemediation(s *kube.Setup, src addrSource, ref []netip.Addr) string {
	if src.Name == "zone" {
		ns, name := "", ""
		if s.ConfigMap != nil {
			ns, name = s.ConfigMap.Namespace, s.ConfigMap.Name
		}
		return remedy.EditConfigMap(ns, name) + "\n# the zone's template must answer exactly:\n" + remedy.ZoneTemplate(ref)
	}
	ips := make([]string, 0, len(ref))
	for _, a := range ref {
		ips = append(ips, a.String())
	}
	return remedy.MergePatch(src.Namespace, "service", src.Svc, map[string]any{"spec": map[string]any{"externalIPs": ips}})
}

// nodeFindings checks that every address is the InternalIP of exactly one Ready Linux node.
func nodeFindings(s *kube.Setup, sources []addrSource) []engine.Finding {
	var all []netip.Addr
	for _, src := range sources {
		for _, a := range src.set() {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	slices.SortFunc(all, func(a, b netip.Addr) int { return a.Compare(b) })
	var out []engine.Finding
	for _, a := range all {
		nodes := kube.NodesWithInternalIP(s.Nodes, a)
		fail := func(code, object, msg string, ev map[string]any) {
			ev["address"] = a.String()
			out = append(out, engine.Finding{Code: code, Severity: engine.SeverityFail, Object: object, Message: msg, Evidence: ev,
				Remediation: fmt.Sprintf("kubectl get nodes -o wide   # pick the InternalIPs of Ready Linux nodes\n# then remove %s from both Services' externalIPs and from the zone's template answers", a)})
		}
		switch {
		case len(nodes) == 0:
			fail("LA101-NO-NODE", a.String(), fmt.Sprintf("%s is the InternalIP of no node: nothing routes it to a node, so nothing answers there", a), map[string]any{"nodes": nodeInternalIPs(s)})
		case len(nodes) > 1:
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			fail("LA101-SEVERAL-NODES", a.String(), fmt.Sprintf("%s is the InternalIP of %d nodes (%s): the LAN cannot route it to one of them reliably", a, len(nodes), strings.Join(names, ", ")), map[string]any{"nodes": names})
		case !kube.NodeReady(nodes[0]):
			fail("LA101-NODE-NOT-READY", fmt.Sprintf("%s (%s)", nodes[0].Name, a), fmt.Sprintf("node %s, which carries %s, is not Ready: connections to this address fail", nodes[0].Name, a), map[string]any{"node": nodes[0].Name})
		case kube.NodeOS(nodes[0]) != "linux":
			os := kube.NodeOS(nodes[0])
			fail("LA101-NODE-NOT-LINUX", fmt.Sprintf("%s (%s)", nodes[0].Name, a), fmt.Sprintf("node %s, which carries %s, runs %q, not Linux: the setup relies on Linux kube-proxy capturing the externalIPs", nodes[0].Name, a, os), map[string]any{"node": nodes[0].Name, "os": os})
		}
	}
	return out
}

func nodeInternalIPs(s *kube.Setup) map[string]string {
	out := map[string]string{}
	for _, n := range s.Nodes {
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
