package netpath

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/config"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// clusterNames exist in every cluster: if the LAN DNS resolves them, it forwards to the
// cluster DNS (dnsPolicy ClusterFirst) and the whole LAN can enumerate Services.
var clusterNames = []string{"kubernetes.default.svc.cluster.local", "kube-dns.kube-system.svc.cluster.local"}

// NoClusterLeak is LA304: cluster-internal names do not resolve through the LAN DNS.
func NoClusterLeak(env *Env) engine.Check {
	return catalogue.Check("LA304", func(ctx context.Context) engine.Outcome { return noClusterLeak(ctx, env) })
}

func noClusterLeak(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := dnsPath(env)
	if !ok {
		return out
	}
	// A cluster name goes through the '.' block's upstream (or the cluster DNS): its silence
	// says nothing about the address, which the zone's apex proves first (askForwarded).
	results := netEachTarget(ctx, targets, func(ctx context.Context, t Target) []nameResult {
		rs := make([]nameResult, 0, len(clusterNames))
		for _, n := range clusterNames {
			r := askForwarded(ctx, env, p, t, n)
			if r.proveErr != nil {
				return append(rs, nameResult{name: r.proof, err: r.proveErr, proof: true})
			}
			rs = append(rs, nameResult{name: n, reply: r.reply, err: r.err})
		}
		return rs
	})
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}
	policy := p.Fixes.DNSPolicy
	var findings []engine.Finding
	answered := 0
	perAddr := map[string]any{}
	for i, t := range targets {
		seen := map[string]any{}
		alive := true
		for _, r := range results[i] {
			ev := p.hostEvidence(map[string]any{"address": t.Addr.String(), "name": r.name})
			switch {
			case r.err != nil && r.proof:
				findings = append(findings, netUnreachable("LA304", t, "A "+r.name+" over udp", r.err, ev))
				alive = alive && !probe.IsNoAnswer(r.err)
				continue
			case r.err != nil:
				// No answer from the upstream for a cluster name: no leak seen (LA303 judges
				// the upstream).
				seen[r.name] = "no answer: " + r.err.Error()
				continue
			}
			seen[r.name] = describeDNSReply(r.reply)
			if addrs := r.reply.Addrs(); r.reply.Rcode() == dns.RcodeSuccess && len(addrs) > 0 {
				ev["answers"] = probe.AddrStrings(addrs)
				ev["dnsPolicy"] = policy
				findings = append(findings, leakFinding(p, t, r.name, addrs, policy, ev))
			}
		}
		if alive {
			answered++
			perAddr[t.Addr.Addr().String()] = seen
		}
	}
	return askedOutcome(env, p, targets, answered, findings, "LA304-SUMMARY",
		fmt.Sprintf("%d of %d addresses were asked %s", answered, len(targets), strings.Join(clusterNames, ", ")),
		map[string]any{"answers": perAddr})
}

func leakFinding(p *Path, t Target, name string, addrs []netip.Addr, policy string, ev map[string]any) engine.Finding {
	why := "the DNS pods forward to the cluster DNS"
	if policy != "" {
		why += fmt.Sprintf(" (their dnsPolicy is %s)", policy)
	}
	fix := "# the LAN DNS pods must inherit the node's resolvers, not the cluster DNS:\n"
	if f := p.Fixes; f.DNSDeployment != "" {
		fix += config.DNSPolicyDefault(f.DNSNamespace, f.DNSDeployment)
	} else {
		fix += `kubectl -n <namespace> patch deployment <dns deployment> --type=merge -p '{"spec":{"template":{"spec":{"dnsPolicy":"Default"}}}}'`
	}
	return engine.Finding{
		Code:     "LA304-LEAK",
		Severity: engine.SeverityFail,
		Object:   t.Object,
		Message: fmt.Sprintf("%s resolves the cluster-internal name %s to %s: %s, so any machine on the LAN can enumerate Services",
			t.Addr.Addr(), name, probe.JoinAddrs(addrs), why),
		Evidence:    ev,
		Remediation: fix,
	}
}
