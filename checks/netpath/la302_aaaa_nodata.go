package netpath

import (
	"context"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// AAAANoData is LA302: AAAA for the zone's names is NOERROR with no record (NODATA). NXDOMAIN
// would tell caches the name does not exist at all (RFC 8020), SERVFAIL makes clients wait or
// change server, and a public AAAA sends IPv6-capable workstations around the LAN path.
func AAAANoData(env *Env) engine.Check {
	return catalogue.Check("LA302", func(ctx context.Context) engine.Outcome { return aaaaNoData(ctx, env) })
}

func aaaaNoData(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := dnsPath(env)
	if !ok {
		return out
	}
	if p.Zone.IsZero() {
		return engine.Outcome{Skip: "the zone is not known (name it with --zone)"}
	}
	names := netUniqueNames(p.Host.Name, randomLabel(p.Zone.String()))
	results := netEachTarget(ctx, targets, func(ctx context.Context, t Target) []nameResult {
		rs := make([]nameResult, 0, len(names))
		for _, n := range names {
			r, err := env.Probes.Query(ctx, t.Addr, n, dns.TypeAAAA, "udp")
			rs = append(rs, nameResult{name: n, reply: r, err: err})
		}
		return rs
	})
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}
	var findings []engine.Finding
	answered := 0
	perAddr := map[string]any{}
	for i, t := range targets {
		alive := true
		seen := map[string]any{}
		for _, r := range results[i] {
			what := "AAAA " + r.name + " over udp"
			ev := p.hostEvidence(map[string]any{"address": t.Addr.String(), "name": r.name})
			if r.err != nil {
				findings = append(findings, netUnreachable("LA302", t, what, r.err, ev))
				if probe.IsNoAnswer(r.err) {
					alive = false
					break // the address is dead: one finding says it
				}
				continue
			}
			seen[r.name] = describeDNSReply(r.reply)
			ev["rcode"] = r.reply.RcodeName()
			ev["answers"] = probe.AddrStrings(r.reply.Addrs())
			if f, bad := judgeAAAA(p, t, r, ev); bad {
				findings = append(findings, f)
			}
		}
		if alive {
			answered++
			perAddr[t.Addr.Addr().String()] = seen
		}
	}
	return askedOutcome(env, p, targets, answered, findings, "LA302-SUMMARY",
		fmt.Sprintf("%d of %d addresses answered AAAA for %s", answered, len(targets), strings.Join(names, ", ")),
		map[string]any{"answers": perAddr, "names": names})
}

func describeDNSReply(r *probe.DNSReply) string {
	s := r.RcodeName()
	if addrs := r.Addrs(); len(addrs) > 0 {
		s += " " + probe.JoinAddrs(addrs)
	} else if r.Rcode() == dns.RcodeSuccess {
		s += " (NODATA)"
	}
	if r.Authoritative() {
		s += ", aa"
	}
	return s
}

// anyTemplateFix is the Corefile lines that make every other type NODATA in the zone.
func anyTemplateFix(p *Path) string {
	return p.Fixes.EditCorefile() + "\n# in the zone's server block, after `template IN A { ... }`:\n" + remedy.CatchAll
}

func judgeAAAA(p *Path, t Target, r nameResult, ev map[string]any) (engine.Finding, bool) {
	f := engine.Finding{Severity: engine.SeverityFail, Object: t.Object, Evidence: ev}
	rep := r.reply
	switch {
	case rep.NoData(dns.TypeAAAA):
		return f, false
	case rep.Rcode() == dns.RcodeSuccess && len(p.ExpectedAAAA) > 0 && probe.SameAddrs(rep.Addrs(), p.ExpectedAAAA):
		// Dual stack: the zone answers AAAA with exactly the IPv6 addresses the Services carry,
		// which kube-proxy captures like the IPv4 ones.
		return f, false
	case rep.Rcode() == dns.RcodeSuccess:
		f.Code = "LA302-AAAA-ANSWER"
		ev["expectedAAAA"] = probe.AddrStrings(p.ExpectedAAAA)
		if len(p.ExpectedAAAA) == 0 {
			f.Message = fmt.Sprintf("%s answers AAAA %s with %s, which no Service carries: IPv6-capable workstations connect there instead of the LAN addresses",
				t.Addr.Addr(), r.name, probe.JoinAddrs(rep.Addrs()))
			f.Remediation = "# the zone must not answer AAAA; remove AAAA answers and keep only:\n" + anyTemplateFix(p)
			break
		}
		f.Message = fmt.Sprintf("%s answers AAAA %s with %s, not the DNS Service's IPv6 externalIPs %s: IPv6-capable workstations connect where nothing is captured",
			t.Addr.Addr(), r.name, probe.JoinAddrs(rep.Addrs()), probe.JoinAddrs(p.ExpectedAAAA))
		f.Remediation = p.Fixes.EditCorefile() + "\n# in the zone's server block, answer AAAA with exactly the Services' IPv6 addresses:\n" + remedy.ZoneTemplate(p.ExpectedAAAA)
	case rep.NXDomain():
		f.Code = "LA302-NXDOMAIN"
		f.Message = fmt.Sprintf("%s answers AAAA %s with NXDOMAIN: resolvers may cache the whole name as non-existent (RFC 8020) and fail the A lookup too",
			t.Addr.Addr(), r.name)
		f.Remediation = anyTemplateFix(p)
	default:
		f.Code = "LA302-RCODE"
		f.Message = fmt.Sprintf("%s answers AAAA %s with %s: the question falls through the zone's templates; workstations wait for it or try another server",
			t.Addr.Addr(), r.name, rep.RcodeName())
		f.Remediation = anyTemplateFix(p)
	}
	return f, true
}
