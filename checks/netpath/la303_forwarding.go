package checks

import (
	"context"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// DefaultOutsideName is asked by LA303 when --outside-name is not given: the name the seed's
// own verification uses (`dig @10.0.10.12 example.org`), reserved by RFC 2606 and resolvable on
// any network with Internet DNS.
const DefaultOutsideName = "example.org"

// Forwarding is LA303: a name outside the zone resolves through the '.' block, because some
// clients (systemd-resolved first) send any name to any DNS server of the link. When it does,
// the server is a recursive resolver open to the whole LAN, which the user should know (info).
func Forwarding(env *Env) engine.Check {
	return engine.Check{
		ID:    "LA303",
		Title: "DNS resolves names outside the zone (forwarding); the resolver is open to the LAN",
		Run:   func(ctx context.Context) engine.Outcome { return forwarding(ctx, env) },
	}
}

func forwarding(ctx context.Context, env *Env) engine.Outcome {
	p, out, ok := newDNSPath(env)
	if !ok {
		return out
	}
	name := strings.TrimSuffix(strings.TrimSpace(env.Options.OutsideName), ".")
	if name == "" {
		name = DefaultOutsideName
	}
	type result struct {
		reply *probe.DNSReply
		err   error
	}
	results := netEachTarget(ctx, p.targets, func(ctx context.Context, t netTarget) result {
		r, err := env.Probes.Query(ctx, t.Addr, name, dns.TypeA, "udp")
		return result{reply: r, err: err}
	})
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}
	var findings []engine.Finding
	var resolving []string
	answered := 0
	for i, t := range p.targets {
		r := results[i]
		ev := p.host.evidence(map[string]any{"address": t.Addr.String(), "outsideName": name})
		what := "A " + name + " over udp"
		if r.err != nil {
			findings = append(findings, netUnreachable(t, what, r.err, ev))
			if !probe.IsNoAnswer(r.err) {
				answered++
			}
			continue
		}
		answered++
		ev["rcode"] = r.reply.RcodeName()
		ev["answers"] = probe.AddrStrings(r.reply.Addrs())
		ev["recursionAvailable"] = r.reply.RecursionAvailable()
		if f, bad := judgeForwarding(env, t, name, r.reply, ev); bad {
			findings = append(findings, f)
			continue
		}
		resolving = append(resolving, t.Addr.Addr().String())
	}
	if answered == 0 {
		return engine.Outcome{Findings: findings, Err: netNoneAnswered(p.targets, env.Probes.Timeout())}
	}
	if len(resolving) > 0 {
		findings = append(findings, engine.Finding{
			Severity: engine.SeverityInfo,
			Object:   p.service,
			Message: fmt.Sprintf("%s resolve %s for this machine: they are recursive resolvers open to every machine that reaches them on port %d",
				strings.Join(resolving, ", "), name, p.targets[0].Addr.Port()),
			Evidence: p.host.evidence(map[string]any{"outsideName": name, "resolvingAddresses": resolving}),
			Remediation: "# if only the LAN should use them, restrict the '.' block with the acl plugin, e.g.:\n" +
				"acl {\n    allow net 10.0.0.0/8 192.168.0.0/16 172.16.0.0/12\n    block\n}",
		})
	}
	return engine.Outcome{Findings: findings}
}

func judgeForwarding(env *Env, t netTarget, name string, rep *probe.DNSReply, ev map[string]any) (engine.Finding, bool) {
	f := engine.Finding{Severity: engine.SeverityFail, Object: t.Object, Evidence: ev}
	forwardFix := editCorefileCommand(env) + "\n# a '.' block must forward names outside the zone (dnsPolicy Default gives the node's resolvers):\n" +
		".:1053 {\n    errors\n    reload\n    cache 30\n    forward . /etc/resolv.conf\n}"
	switch {
	case rep.Rcode() == dns.RcodeSuccess && len(rep.Addrs()) > 0:
		return f, false
	case rep.Rcode() == dns.RcodeSuccess:
		f.Severity = engine.SeverityWarn
		f.Message = fmt.Sprintf("%s answers A %s with no address (NODATA): forwarding works but this name proves nothing; pass --outside-name with a name your network resolves",
			t.Addr.Addr(), name)
	case rep.Rcode() == dns.RcodeRefused:
		f.Message = fmt.Sprintf("%s refuses A %s: no server block takes names outside the zone, so clients that send every name to it (systemd-resolved) fail", t.Addr.Addr(), name)
		f.Remediation = forwardFix
	case rep.NXDomain():
		f.Message = fmt.Sprintf("%s says %s does not exist (NXDOMAIN): the forwarder answers, but not with this network's view; pass --outside-name with a name your network resolves, or check the '.' block's upstream",
			t.Addr.Addr(), name)
		f.Remediation = forwardFix
	default:
		f.Message = fmt.Sprintf("%s answers A %s with %s: the '.' block cannot reach its upstream", t.Addr.Addr(), name, rep.RcodeName())
		f.Remediation = "# check the upstream the DNS pods inherit (dnsPolicy: Default = the node's /etc/resolv.conf):\n" + forwardFix
	}
	return f, true
}
