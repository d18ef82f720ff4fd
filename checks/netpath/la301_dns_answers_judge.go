package netpath

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// longTTLSeconds: beyond an hour, workstations keep a removed address in their caches for too
// long for taking a broken node out of the list to be a quick fix.
const longTTLSeconds = 3600

// judgeAAnswers returns the findings for one address and a summary of its answers.
func judgeAAnswers(p *Path, t Target, rs []aResult, want []netip.Addr, base func() map[string]any) ([]engine.Finding, map[string]any) {
	var findings []engine.Finding
	answers := map[string]any{}
	var wrong, notAA []string
	var missing, extra []netip.Addr
	minTTL, maxTTL := uint32(0), uint32(0)
	for _, r := range rs {
		key := r.String()
		if r.err != nil {
			ev := base()
			findings = append(findings, netUnreachable("LA301", t, key, r.err, ev))
			answers[key] = "error: " + r.err.Error()
			continue
		}
		got := r.reply.Addrs()
		desc := r.reply.RcodeName() + " " + probe.JoinAddrs(got)
		if r.reply.Truncated {
			desc += " (truncated over UDP, answered over TCP)"
		}
		answers[key] = desc
		if r.reply.Rcode() != dns.RcodeSuccess || !probe.SameAddrs(got, want) {
			wrong = append(wrong, key+": "+desc)
			m, e := probe.DiffAddrs(want, got)
			missing, extra = append(missing, m...), append(extra, e...)
		}
		if !r.reply.Authoritative() {
			notAA = append(notAA, key)
		}
		if ttl, ok := r.reply.MinTTL(); ok {
			if minTTL == 0 || ttl < minTTL {
				minTTL = ttl
			}
			maxTTL = max(maxTTL, ttl)
		}
	}
	if len(wrong) > 0 {
		ev := base()
		ev["address"] = t.Addr.String()
		ev["answers"] = answers
		ev["missing"] = probe.AddrStrings(probe.SortAddrs(missing))
		ev["extra"] = probe.AddrStrings(probe.SortAddrs(extra))
		findings = append(findings, wrongAnswer(p, t, want, wrong, ev))
	}
	if len(notAA) > 0 {
		ev := base()
		ev["address"] = t.Addr.String()
		ev["notAuthoritative"] = notAA
		findings = append(findings, engine.Finding{
			Code:     "LA301-NOT-AUTHORITATIVE",
			Severity: engine.SeverityWarn,
			Object:   t.Object,
			Message: fmt.Sprintf("%s answers without the AA flag (%s): the answer comes from a cache or a forwarder, not from the zone's template",
				t.Addr.Addr(), strings.Join(notAA, ", ")),
			Evidence:    ev,
			Remediation: "# the zone's server block must serve the name with `template IN A`; check the block's zone and port:\n" + p.Fixes.EditCorefile(),
		})
	}
	if maxTTL > longTTLSeconds {
		ev := base()
		ev["address"] = t.Addr.String()
		ev["ttlSeconds"] = maxTTL
		findings = append(findings, engine.Finding{
			Code:     "LA301-LONG-TTL",
			Severity: engine.SeverityWarn,
			Object:   t.Object,
			Message: fmt.Sprintf("%s answers with a TTL of %ds: after an address change, workstations keep the old list for up to %s",
				t.Addr.Addr(), maxTTL, time.Duration(maxTTL)*time.Second),
			Evidence:    ev,
			Remediation: "# lower the TTL in the template answers, e.g. 60:\n" + p.Fixes.EditCorefile(),
		})
	}
	return findings, map[string]any{"answers": answers, "ttlMin": minTTL, "ttlMax": maxTTL}
}

// wrongAnswer is LA301-WRONG-ANSWER for an address whose answers are not the externalIPs.
func wrongAnswer(p *Path, t Target, want []netip.Addr, wrong []string, ev map[string]any) engine.Finding {
	f := engine.Finding{
		Code:     "LA301-WRONG-ANSWER",
		Severity: engine.SeverityFail,
		Object:   t.Object,
		Message: fmt.Sprintf("%s does not answer the DNS Service's externalIPs (%s): %s",
			t.Addr.Addr(), probe.JoinAddrs(want), strings.Join(wrong, "; ")),
		Evidence:    ev,
		Remediation: p.Fixes.EditCorefile() + "\n# in the zone's server block, answer exactly the DNS Service's externalIPs:\n" + remedy.ZoneTemplate(want),
	}
	if staleReplica(p, want) {
		f.Message += "; the Corefile in the ConfigMap answers them, so a DNS replica runs an older one (no reload, or a subPath mount): " +
			"kube-proxy sends each query to any replica, so the wrong answer comes and goes"
		f.Remediation = "# the ConfigMap is right; every DNS pod must run it:\n" + p.Fixes.RestartDNS()
	}
	return f
}

// staleReplica: the ConfigMap's zone template answers exactly what is expected, so a wrong
// answer comes from a replica that runs another Corefile, and editing the ConfigMap changes
// nothing (proven on the real kube-proxy and CoreDNS: lab/e2e/kubeproxy_test.go).
func staleReplica(p *Path, want []netip.Addr) bool {
	return len(p.ZoneTemplate) > 0 && probe.SameAddrs(p.ZoneTemplate, want)
}

// disagreements finds names for which the addresses that answered gave different sets. The
// address does not choose the answer, the replica does: kube-proxy sends each query (each UDP
// flow) to any ready replica behind any address, under either externalTrafficPolicy's Cluster
// (pkg/proxy/iptables/proxier.go: one random-probability rule per endpoint) or, among the
// node's replicas, Local. So differing answers are replicas that differ, and one workstation,
// even one that keeps to one server, gets each of them from one query to the next.
func disagreements(p *Path, names []string, byName map[string]map[string]string, base func() map[string]any) []engine.Finding {
	var out []engine.Finding
	for _, n := range names {
		sets := byName[n]
		distinct := map[string]bool{}
		for _, s := range sets {
			distinct[s] = true
		}
		if len(distinct) < 2 {
			continue
		}
		addrs := make([]string, 0, len(sets))
		for a := range sets {
			addrs = append(addrs, a)
		}
		sort.Strings(addrs)
		parts := make([]string, 0, len(addrs))
		byAddr := map[string]any{}
		for _, a := range addrs {
			parts = append(parts, a+" says "+sets[a])
			byAddr[a] = sets[a]
		}
		ev := base()
		ev["name"] = n
		ev["answersByAddress"] = byAddr
		out = append(out, engine.Finding{
			Code:        "LA301-DISAGREE",
			Severity:    engine.SeverityFail,
			Object:      p.DNSObject,
			Message:     fmt.Sprintf("the addresses disagree on A %s (%s): the DNS replicas answer differently, and kube-proxy sends each query to any of them, so every workstation gets one answer or the other from one query to the next", n, strings.Join(parts, "; ")),
			Evidence:    ev,
			Remediation: "# every DNS pod must serve the same Corefile; a pod that did not reload keeps the old one:\n" + p.Fixes.RestartDNS(),
		})
	}
	return out
}
