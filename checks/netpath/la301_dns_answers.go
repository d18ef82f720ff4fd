package netpath

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// DNSAnswers is LA301: every DNS address answers A for the probe host, the zone apex and a
// random label with exactly the DNS Service's externalIPs, over UDP and over TCP, with the AA
// flag; and every address answers the same. Behind every address kube-proxy sends each query
// (each UDP flow: a new source port) to any ready replica (proven on the real kube-proxy:
// lab/e2e/kubeproxy_test.go), so answers that differ between addresses are replicas that
// differ, and a workstation sees them all, even one that keeps to one server.
func DNSAnswers(env *Env) engine.Check {
	return catalogue.Check("LA301", func(ctx context.Context) engine.Outcome { return dnsAnswers(ctx, env) })
}

type aQuery struct {
	name, network string
}

func (q aQuery) String() string { return "A " + q.name + " over " + q.network }

type aResult struct {
	aQuery
	reply *probe.DNSReply
	err   error
}

func dnsAnswers(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := dnsPath(env)
	if !ok {
		return out
	}
	if p.Zone.IsZero() {
		return engine.Outcome{Skip: "the zone is not known (name it with --zone)"}
	}
	names := netUniqueNames(p.Host.Name, p.Zone.String(), randomLabel(p.Zone.String()))
	results := askEachTarget(ctx, env, targets, aQueries(names))
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}

	want := p.Expected
	base := func() map[string]any {
		return p.hostEvidence(map[string]any{
			"expected":         probe.AddrStrings(want),
			"expectedFrom":     p.DNSObject + " externalIPs",
			"zoneTemplate":     probe.AddrStrings(p.ZoneTemplate),
			"proxyExternalIPs": probe.AddrStrings(p.ProxyAddrs),
			"names":            names,
		})
	}
	var findings []engine.Finding
	answered := 0
	perAddr := map[string]any{}
	// byName[name] = address -> answer set over UDP, for the "every address agrees" test.
	byName := map[string]map[string]string{}
	for i, t := range targets {
		rs := results[i]
		if allNoAnswer(rs) {
			findings = append(findings, netUnreachable("LA301", t, rs[0].String(), rs[0].err, base()))
			continue
		}
		answered++
		fs, summary := judgeAAnswers(p, t, rs, want, base)
		findings = append(findings, fs...)
		perAddr[t.Addr.Addr().String()] = summary
		for _, r := range rs {
			if r.err == nil && r.network == "udp" {
				if byName[r.name] == nil {
					byName[r.name] = map[string]string{}
				}
				byName[r.name][t.Addr.Addr().String()] = probe.JoinAddrs(r.reply.Addrs())
			}
		}
	}
	findings = append(findings, disagreements(p, names, byName, base)...)
	if answered == 0 {
		return engine.Outcome{Findings: findings, Err: netNoneAnswered(targets, env.Probes.Timeout())}
	}
	ev := base()
	ev["answers"] = perAddr
	findings = append(findings, engine.Finding{
		Code:     "LA301-SUMMARY",
		Severity: engine.SeverityInfo,
		Object:   p.DNSObject,
		Message: fmt.Sprintf("%d of %d addresses answered A for %s over UDP and TCP; expected %s",
			answered, len(targets), strings.Join(names, ", "), probe.JoinAddrs(want)),
		Evidence: ev,
	})
	return engine.Outcome{Findings: findings}
}

// aQueries are LA301's questions: every name over UDP (what workstations ask), and the probe
// host over TCP as well: TCP is the same server behind another transport, one name proves it,
// and a TCP exchange costs a connection per address.
func aQueries(names []string) []aQuery {
	queries := make([]aQuery, 0, len(names)+1)
	for _, n := range names {
		queries = append(queries, aQuery{name: n, network: "udp"})
	}
	return append(queries, aQuery{name: names[0], network: "tcp"})
}

// askEachTarget asks every target the queries. The first question (probe host over UDP, what a
// workstation asks first) goes alone, so that it is the address's first contact; the others
// then go out at once: the Set bounds them, and a server that hangs on TCP only costs one
// timeout, not one per name.
func askEachTarget(ctx context.Context, env *Env, targets []Target, queries []aQuery) [][]aResult {
	return netEachTarget(ctx, targets, func(ctx context.Context, t Target) []aResult {
		rs := make([]aResult, len(queries))
		ask := func(i int) {
			q := queries[i]
			r, err := env.Probes.Query(ctx, t.Addr, q.name, dns.TypeA, q.network)
			rs[i] = aResult{aQuery: q, reply: r, err: err}
		}
		ask(0)
		var wg sync.WaitGroup
		for i := 1; i < len(queries); i++ {
			wg.Go(func() {
				ask(i)
			})
		}
		wg.Wait()
		return rs
	})
}

func netUniqueNames(names ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// allNoAnswer is a dead address: said once. A live address where only some questions time
// out (TCP filtered, say) gets one finding per question instead.
func allNoAnswer(rs []aResult) bool {
	for _, r := range rs {
		if !probe.IsNoAnswer(r.err) {
			return false
		}
	}
	return len(rs) > 0
}
