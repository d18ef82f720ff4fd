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

// DefaultOutsideName is asked by LA303 when --outside-name is not given: the name the seed's
// own verification uses (`dig @10.0.10.12 example.org`), reserved by RFC 2606 and resolvable on
// any network with Internet DNS.
const DefaultOutsideName = "example.org"

// Forwarding is LA303: a name outside the zone resolves through the '.' block, because some
// clients (systemd-resolved first) send any name to any DNS server of the link. When it does,
// the server is a recursive resolver open to the whole LAN, which the user should know (info).
func Forwarding(env *Env) engine.Check {
	return catalogue.Check("LA303", func(ctx context.Context) engine.Outcome { return forwarding(ctx, env) })
}

func forwarding(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := dnsPath(env)
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
	results := netEachTarget(ctx, targets, func(ctx context.Context, t Target) result {
		r, err := env.Probes.Query(ctx, t.Addr, name, dns.TypeA, "udp")
		return result{reply: r, err: err}
	})
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}
	var findings []engine.Finding
	var resolving []string
	answered := 0
	for i, t := range targets {
		r := results[i]
		ev := p.hostEvidence(map[string]any{"address": t.Addr.String(), "outsideName": name})
		what := "A " + name + " over udp"
		if r.err != nil {
			findings = append(findings, netUnreachable("LA303", t, what, r.err, ev))
			if !probe.IsNoAnswer(r.err) {
				answered++
			}
			continue
		}
		answered++
		ev["rcode"] = r.reply.RcodeName()
		ev["answers"] = probe.AddrStrings(r.reply.Addrs())
		ev["recursionAvailable"] = r.reply.RecursionAvailable()
		if f, bad := judgeForwarding(p, t, name, r.reply, ev); bad {
			findings = append(findings, f)
			continue
		}
		resolving = append(resolving, t.Addr.Addr().String())
	}
	if answered == 0 {
		return engine.Outcome{Findings: findings, Err: netNoneAnswered(targets, env.Probes.Timeout())}
	}
	if len(resolving) > 0 {
		findings = append(findings, engine.Finding{
			Code:     "LA303-OPEN-RESOLVER",
			Severity: engine.SeverityInfo,
			Object:   p.DNSObject,
			Message: fmt.Sprintf("%s resolve %s for this machine: they are recursive resolvers open to every machine that reaches them on port %d",
				strings.Join(resolving, ", "), name, targets[0].Addr.Port()),
			Evidence: p.hostEvidence(map[string]any{"outsideName": name, "resolvingAddresses": resolving}),
			Remediation: "# if only the LAN should use them, restrict the '.' block with the acl plugin, e.g.:\n" +
				"acl {\n    allow net 10.0.0.0/8 192.168.0.0/16 172.16.0.0/12\n    block\n}",
		})
	}
	return engine.Outcome{Findings: findings}
}

func judgeForwarding(p *Path, t Target, name string, rep *probe.DNSReply, ev map[string]any) (engine.Finding, bool) {
	f := engine.Finding{Severity: engine.SeverityFail, Object: t.Object, Evidence: ev}
	forwardFix := p.Fixes.EditCorefile() + "\n# a '.' block must forward names outside the zone (dnsPolicy Default gives the node's resolvers):\n" +
		remedy.DotBlock("1053")
	switch {
	case rep.Rcode() == dns.RcodeSuccess && len(rep.Addrs()) > 0:
		return f, false
	case rep.Rcode() == dns.RcodeSuccess:
		f.Code, f.Severity = "LA303-NODATA", engine.SeverityWarn
		f.Message = fmt.Sprintf("%s answers A %s with no address (NODATA): forwarding works but this name proves nothing; pass --outside-name with a name your network resolves",
			t.Addr.Addr(), name)
	case rep.Rcode() == dns.RcodeRefused:
		f.Code = "LA303-NAME-REFUSED"
		f.Message = fmt.Sprintf("%s refuses A %s: no server block takes names outside the zone, so clients that send every name to it (systemd-resolved) fail", t.Addr.Addr(), name)
		f.Remediation = forwardFix
	case rep.NXDomain():
		f.Code = "LA303-NXDOMAIN"
		f.Message = fmt.Sprintf("%s says %s does not exist (NXDOMAIN): the forwarder answers, but not with this network's view; pass --outside-name with a name your network resolves, or check the '.' block's upstream",
			t.Addr.Addr(), name)
		f.Remediation = forwardFix
	default:
		f.Code = "LA303-UPSTREAM-FAILED"
		f.Message = fmt.Sprintf("%s answers A %s with %s: the '.' block cannot reach its upstream", t.Addr.Addr(), name, rep.RcodeName())
		f.Remediation = "# check the upstream the DNS pods inherit (dnsPolicy: Default = the node's /etc/resolv.conf):\n" + forwardFix
	}
	return f, true
}
