package workstation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// serversAnswer (WS003): each of the zone's DNS servers, asked directly from this machine,
// answers the probe name with the node addresses. It tells a workstation problem (WS001 fails,
// this passes) from a path or server problem (this fails too: off-site, a firewall, lan-dns down).
func serversAnswer(s *session) engine.Check {
	return catalogue.Check("WS003", func(ctx context.Context) engine.Outcome {
		env := s.env
		servers := env.Target.Servers
		if len(servers) > maxServers {
			servers = servers[:maxServers]
		}
		findings := make([]engine.Finding, len(servers))
		var wg sync.WaitGroup
		for i, server := range servers {
			wg.Go(func() {
				findings[i] = askServer(ctx, env, server)
			})
		}
		wg.Wait()
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return engine.Outcome{Err: fmt.Errorf("asking the zone's servers: %w", ctx.Err())}
		}
		failed := 0
		for _, f := range findings {
			if f.Severity == engine.SeverityFail {
				failed++
			}
		}
		if failed == len(findings) && failed > 0 {
			findings = append(findings, engine.Finding{Code: "WS003-NONE-ANSWERS",
				Severity: engine.SeverityFail,
				Object:   "zone " + env.Target.Zone.String(),
				Message:  "no server of the zone answers from here: this machine is off-site, a firewall drops DNS to the node addresses, or the zone's DNS is down",
				Remediation: lines(
					"kubectl lanaccess doctor --only LA103,LA301   # from a machine with cluster access",
					offsiteAdvice(env),
				),
			})
		}
		return engine.Outcome{Findings: findings}
	})
}

func askServer(ctx context.Context, env Env, server netip.Addr) engine.Finding {
	port := env.DNSPort
	if port == 0 {
		port = 53
	}
	target := netip.AddrPortFrom(server, port)
	object := "DNS server " + target.String()
	ctx, cancel := context.WithTimeout(ctx, env.timeout())
	defer cancel()
	reply, err := env.DNS.Query(ctx, target, env.ProbeName, dns.TypeA, "udp")
	if err != nil {
		return engine.Finding{Code: "WS003-NO-ANSWER",
			Severity: engine.SeverityFail,
			Object:   object,
			Message:  fmt.Sprintf("no answer from %s for %s: %v", target, env.ProbeName, err),
			Evidence: map[string]any{"server": target.String(), "name": env.ProbeName, "error": err.Error()},
		}
	}
	got := reply.Addrs()
	evidence := map[string]any{
		"server": target.String(), "name": env.ProbeName, "rcode": reply.RcodeName(),
		"got": probe.AddrStrings(got), "rttMs": reply.RTT.Milliseconds(), "authoritative": reply.Authoritative(),
	}
	switch {
	case reply.Rcode() != dns.RcodeSuccess:
		return engine.Finding{Code: "WS003-NOT-THE-ZONE",
			Severity: engine.SeverityFail, Object: object, Evidence: evidence,
			Message:     fmt.Sprintf("%s answers %s for %s: it does not serve the zone %s", target, reply.RcodeName(), env.ProbeName, env.Target.Zone.String()),
			Remediation: "kubectl lanaccess doctor --only LA104,LA301   # from a machine with cluster access: the zone block of the Corefile",
		}
	case !probe.SameAddrs(got, env.Target.Answers):
		return engine.Finding{Code: "WS003-WRONG-ANSWER",
			Severity: engine.SeverityFail, Object: object, Evidence: evidence,
			Message: fmt.Sprintf("%s answers %s for %s, not the node addresses %s: this address is not the zone's DNS (another service on the node, or a stale Corefile)",
				target, probe.JoinAddrs(got), env.ProbeName, probe.JoinAddrs(env.Target.Answers)),
			Remediation: "kubectl lanaccess doctor --only LA101,LA201,LA301   # from a machine with cluster access",
		}
	}
	if f, ok := refusesOutside(ctx, env, target, object); ok {
		return f
	}
	return engine.Finding{Code: "WS003-ANSWERS",
		Severity: engine.SeverityInfo, Object: object, Evidence: evidence,
		Message: fmt.Sprintf("%s answers %s with %s in %s", target, env.ProbeName, probe.JoinAddrs(got), reply.RTT.Round(100*time.Microsecond)),
	}
}

// refusesOutside asks a server that answers the zone for the outside name too. On Linux,
// systemd-resolved sends every name of the link to its current server, not only the zone's
// (the servers are per link), and on REFUSED it switches to the next server for good: systemd
// v252 src/resolve/resolved-dns-transaction.c, dns_transaction_process_reply ("Server returned
// REFUSED, switching servers"). Proven on the real workstation (lab/internal/workstation,
// TestRealWorkstation "without the '.' block"): one outside name moves the link to the network's
// DNS. With NRPT or /etc/resolver only the zone reaches these servers: there it is a note.
func refusesOutside(ctx context.Context, env Env, target netip.AddrPort, object string) (engine.Finding, bool) {
	if env.OutsideName == "" {
		return engine.Finding{}, false
	}
	reply, err := env.DNS.Query(ctx, target, env.OutsideName, dns.TypeA, "udp")
	if err != nil || reply.Rcode() != dns.RcodeRefused {
		// A timeout or SERVFAIL here is the '.' block's upstream (WS002 and doctor's LA303 judge
		// it); only a refusal says the server keeps other names out by design.
		return engine.Finding{}, false
	}
	f := engine.Finding{Code: "WS003-REFUSES-OUTSIDE", Object: object,
		Evidence: map[string]any{"server": target.String(), "name": env.OutsideName, "rcode": reply.RcodeName()},
		Message: fmt.Sprintf("%s answers the zone but REFUSED for %s: it has no '.' block that forwards other names",
			target, env.OutsideName),
		Remediation: "kubectl lanaccess doctor --only LA104   # from a machine with cluster access: add the '.' block (forward . /etc/resolv.conf)",
	}
	if env.OS == ws.Linux {
		f.Severity = engine.SeverityFail
		f.Message += "; systemd-resolved sends every name of the link to its current server and leaves a server that refuses, so the first name outside the zone moves the link to the network's DNS, which answers the zone with the public address"
		return f, true
	}
	f.Severity = engine.SeverityInfo
	f.Message += fmt.Sprintf(" (harmless on %s, where only the zone is sent to it)", env.OS)
	return f, true
}

// offsiteAdvice: on Windows and macOS the setting is global, so off-site it must be removed.
func offsiteAdvice(env Env) string {
	switch env.OS {
	case ws.Windows, ws.MacOS:
		return remedy.Commentf("# off-site: the setting is global on this OS; remove it until you are back (kubectl lanaccess client-config --os %s prints the removal)", string(env.OS))
	}
	return ""
}
