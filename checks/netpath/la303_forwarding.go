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
	results := netEachTarget(ctx, targets, func(ctx context.Context, t Target) forwardResult {
		return askForwarded(ctx, env, p, t, name)
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
		if r.proveErr != nil {
			findings = append(findings, netUnreachable("LA303", t, "A "+r.proof+" over udp", r.proveErr, ev))
			if !probe.IsNoAnswer(r.proveErr) {
				answered++
			}
			continue
		}
		answered++
		if r.err != nil {
			findings = append(findings, forwardFailure(p, t, name, r.err, ev))
			continue
		}
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
			Evidence:    p.hostEvidence(map[string]any{"outsideName": name, "resolvingAddresses": resolving}),
			Remediation: openResolverAdvice(p),
		})
	}
	return engine.Outcome{Findings: findings}
}

// forwardResult is one address's answer to a forwarded name, after a question that proves the
// address (the zone's apex, answered by the template itself).
type forwardResult struct {
	proof    string
	proveErr error
	reply    *probe.DNSReply
	err      error
}

// askForwarded proves the address with a question the zone answers itself, then asks the
// forwarded name: the forward plugin may wait out its own upstream timeouts (it answers
// SERVFAIL only after them, coredns plugin/forward/forward.go ServeDNS), so the forwarded
// name's silence is the upstream's, never the address's.
func askForwarded(ctx context.Context, env *Env, p *Path, t Target, name string) forwardResult {
	r := forwardResult{proof: p.Zone.String()}
	if !p.Zone.IsZero() {
		if _, err := env.Probes.Query(ctx, t.Addr, p.Zone.String(), dns.TypeA, "udp"); err != nil && (probe.IsNoAnswer(err) || probe.IsRefused(err)) {
			r.proveErr = err
			return r
		}
	}
	r.reply, r.err = env.Probes.QueryForwarded(ctx, t.Addr, name, dns.TypeA, "udp")
	if r.err != nil && (p.Zone.IsZero() || probe.IsNotProbed(r.err) || probe.IsRefused(r.err)) {
		// Nothing proved the address: its failure is the address's.
		r.proof, r.proveErr, r.err = name, r.err, nil
	}
	return r
}

// forwardFailure: the address answers the zone but a forwarded name got no answer.
func forwardFailure(p *Path, t Target, name string, err error, ev map[string]any) engine.Finding {
	ev["error"] = err.Error()
	ev["upstreams"] = p.Upstreams
	return engine.Finding{
		Code: "LA303-UPSTREAM-SILENT", Severity: engine.SeverityFail, Object: t.Object, Evidence: ev,
		Message: fmt.Sprintf("%s answers the zone but gave no answer for %s (%v): %s does not answer in time; CoreDNS's forward plugin answers SERVFAIL only after its own timeouts, so clients that send every name here (systemd-resolved) wait, then fail",
			t.Addr.Addr(), name, err, p.upstreamText()),
		Remediation: "# the DNS pods inherit the node's resolvers with dnsPolicy Default; ask the upstream from a DNS pod's node:\n" +
			remedy.Command("dig", "+time=2", "+tries=1", name) + "   # on the node\n" +
			p.Fixes.EditCorefile() + "   # or forward to an upstream that answers: forward . UPSTREAM",
	}
}

// openResolverAdvice restricts the '.' block to the LAN. With externalTrafficPolicy Cluster,
// kube-proxy marks what it receives on an externalIP for masquerade (the external chain jumps to
// KUBE-MARK-MASQ unless the policy is Local: kubernetes pkg/proxy/iptables/proxier.go, the
// externalTrafficChain "masquerade" rule for !svcInfo.ExternalPolicyLocal()), and the kernel
// masquerades it where it leaves the node: a query sent to the replica on another node reaches
// CoreDNS from the receiving node's LAN address, whoever asked, so an acl on source networks
// lets everyone in (proven on the real kube-proxy and CoreDNS: lab/e2e/kubeproxy_test.go); one
// sent to the replica on the same node behind a bridge CNI comes from the bridge's address
// (cni0, a pod address), which an acl allowing only the LAN subnet refuses. The client's
// address is kept only with externalTrafficPolicy Local, where the acl works.
func openResolverAdvice(p *Path) string {
	return "# if only the LAN should use them: keep the client's source address (externalTrafficPolicy: Local;\n" +
		"# with Cluster, kube-proxy masquerades and CoreDNS sees the receiving node's address, LAN or pod bridge,\n" +
		"# whoever asked: an acl then lets everyone in, or refuses the LAN), then restrict the '.' block:\n" +
		remedy.MergePatch(p.Fixes.DNSNamespace, "service", serviceName(p.DNSObject), map[string]any{"spec": map[string]any{"externalTrafficPolicy": "Local"}}) + "\n" +
		p.Fixes.EditCorefile() + "   # in the '.' block:\n" +
		"acl {\n    allow net 10.0.0.0/8 192.168.0.0/16 172.16.0.0/12\n    block\n}\n" +
		"# with Local, a node without a DNS pod drops the queries: keep a DNS pod on every node that carries an address"
}

// serviceName is the name of "Service ns/name".
func serviceName(object string) string {
	ref := object[strings.LastIndex(object, " ")+1:]
	if _, name, ok := strings.Cut(ref, "/"); ok {
		return name
	}
	return ref
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
