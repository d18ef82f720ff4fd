package checks

import (
	"context"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// AAAANoData is LA302: AAAA for the zone's names is NOERROR with no record (NODATA). NXDOMAIN
// would tell caches the name does not exist at all (RFC 8020), SERVFAIL makes clients wait or
// change server, and a public AAAA sends IPv6-capable workstations around the LAN path.
func AAAANoData(env *Env) engine.Check {
	return engine.Check{
		ID:    "LA302",
		Title: "DNS answers AAAA in the zone with NODATA (never NXDOMAIN, SERVFAIL or a public AAAA)",
		Run:   func(ctx context.Context) engine.Outcome { return aaaaNoData(ctx, env) },
	}
}

func aaaaNoData(ctx context.Context, env *Env) engine.Outcome {
	p, out, ok := newDNSPath(env)
	if !ok {
		return out
	}
	if p.zone == "" {
		return engine.Outcome{Skip: "the zone is not known (name it with --zone)"}
	}
	names := netUniqueNames(p.host.Name, randomLabel(p.zone))
	results := netEachTarget(ctx, p.targets, func(ctx context.Context, t netTarget) []nameResult {
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
	for i, t := range p.targets {
		alive := true
		seen := map[string]any{}
		for _, r := range results[i] {
			what := "AAAA " + r.name + " over udp"
			ev := p.host.evidence(map[string]any{"address": t.Addr.String(), "name": r.name})
			if r.err != nil {
				findings = append(findings, netUnreachable(t, what, r.err, ev))
				if probe.IsNoAnswer(r.err) {
					alive = false
					break // the address is dead: one finding says it
				}
				continue
			}
			seen[r.name] = describeDNSReply(r.reply)
			ev["rcode"] = r.reply.RcodeName()
			ev["answers"] = probe.AddrStrings(r.reply.Addrs())
			if f, bad := judgeAAAA(env, t, r, ev); bad {
				findings = append(findings, f)
			}
		}
		if alive {
			answered++
			perAddr[t.Addr.Addr().String()] = seen
		}
	}
	if answered == 0 {
		return engine.Outcome{Findings: findings, Err: netNoneAnswered(p.targets, env.Probes.Timeout())}
	}
	findings = append(findings, engine.Finding{
		Severity: engine.SeverityInfo,
		Object:   p.service,
		Message:  fmt.Sprintf("%d of %d addresses answered AAAA for %s", answered, len(p.targets), strings.Join(names, ", ")),
		Evidence: p.host.evidence(map[string]any{"answers": perAddr, "names": names}),
	})
	return engine.Outcome{Findings: findings}
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
func anyTemplateFix(env *Env) string {
	return editCorefileCommand(env) + "\n# in the zone's server block, after `template IN A { ... }`:\ntemplate ANY ANY {\n    rcode NOERROR\n}"
}

func judgeAAAA(env *Env, t netTarget, r nameResult, ev map[string]any) (engine.Finding, bool) {
	f := engine.Finding{Severity: engine.SeverityFail, Object: t.Object, Evidence: ev}
	rep := r.reply
	switch {
	case rep.NoData(dns.TypeAAAA):
		return f, false
	case rep.Rcode() == dns.RcodeSuccess:
		f.Message = fmt.Sprintf("%s answers AAAA %s with %s: IPv6-capable workstations connect there instead of the LAN addresses",
			t.Addr.Addr(), r.name, probe.JoinAddrs(rep.Addrs()))
		f.Remediation = "# the zone must not answer AAAA; remove AAAA answers and keep only:\n" + anyTemplateFix(env)
	case rep.NXDomain():
		f.Message = fmt.Sprintf("%s answers AAAA %s with NXDOMAIN: resolvers may cache the whole name as non-existent (RFC 8020) and fail the A lookup too",
			t.Addr.Addr(), r.name)
		f.Remediation = anyTemplateFix(env)
	default:
		f.Message = fmt.Sprintf("%s answers AAAA %s with %s: the question falls through the zone's templates; workstations wait for it or try another server",
			t.Addr.Addr(), r.name, rep.RcodeName())
		f.Remediation = anyTemplateFix(env)
	}
	return f, true
}
