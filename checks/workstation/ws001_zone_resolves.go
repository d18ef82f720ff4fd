package workstation

import (
	"context"
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// zoneResolves (WS001): a name in the zone, asked of this machine's resolver as any program
// asks it, gives exactly the node addresses. Extra addresses (the public or VPN record, an AAAA)
// mean the zone is answered by someone else; missing ones, a server with another address list.
func zoneResolves(s *session) engine.Check {
	return catalogue.Check("WS001", func(ctx context.Context) engine.Outcome {
		env := s.env
		r := s.zoneLookup(ctx)
		object := "name " + r.name
		evidence := map[string]any{
			"name":     r.name,
			"expected": probe.AddrStrings(env.Target.Answers),
			"tookMs":   r.took.Milliseconds(),
		}
		if r.err != nil {
			msg, interrupted := lookupFailure(ctx, r)
			if interrupted {
				return engine.Outcome{Err: fmt.Errorf("looking up %s: %w", r.name, ctx.Err())}
			}
			evidence["error"] = r.err.Error()
			return engine.Outcome{Findings: []engine.Finding{{Code: "WS001-NOT-RESOLVED", Severity: engine.SeverityFail,
				Object:      object,
				Message:     msg + ": this machine does not send " + env.Target.Zone.String() + " to the zone's DNS servers" + whereToLook(env.OS),
				Evidence:    evidence,
				Remediation: configureCommand(env),
			}}}
		}
		evidence["got"] = probe.AddrStrings(r.addrs)
		missing, extra := probe.DiffAddrs(env.Target.Answers, r.addrs)
		switch {
		case len(extra) > 0:
			return engine.Outcome{Findings: []engine.Finding{{Code: "WS001-OTHER-ADDRESSES", Severity: engine.SeverityFail,
				Object: object,
				Message: fmt.Sprintf("%s resolves to %s, not only to the node addresses %s: another server answers the zone for this machine (the public or VPN record)%s",
					r.name, probe.JoinAddrs(r.addrs), probe.JoinAddrs(env.Target.Answers), whereToLook(env.OS)),
				Evidence:    withList(evidence, "unexpected", extra),
				Remediation: otherAddressesFix(ctx, env),
			}}}
		case len(missing) > 0:
			return engine.Outcome{Findings: []engine.Finding{{Code: "WS001-MISSING-ADDRESSES", Severity: engine.SeverityWarn,
				Object: object,
				Message: fmt.Sprintf("%s resolves to %s, without %s: the answer comes from a server (or a cache) with an older address list",
					r.name, probe.JoinAddrs(r.addrs), probe.JoinAddrs(missing)),
				Evidence:    withList(evidence, "missing", missing),
				Remediation: resetCommands(env, "") + "\n# if it persists, compare the zone's answers and the Services: kubectl lanaccess doctor --only LA101,LA301",
			}}}
		}
		return engine.Outcome{Findings: []engine.Finding{{Code: "WS001-RESOLVES", Severity: engine.SeverityInfo,
			Object:   object,
			Message:  fmt.Sprintf("%s resolves to %s", r.name, probe.JoinAddrs(r.addrs)),
			Evidence: evidence,
		}}}
	})
}

// otherAddressesFix: on Linux, re-activating the profile helps only a machine whose links list
// the zone's servers (a link stuck on another server); on the lab's real workstation before
// client-config, the reset left the public address in place. A machine where no link of
// systemd-resolved lists them gets the setup instead.
func otherAddressesFix(ctx context.Context, env Env) string {
	if env.OS == ws.Linux {
		cctx, cancel := context.WithTimeout(ctx, env.timeout())
		out, err := env.Commands.Run(cctx, "resolvectl", "status", "--no-pager")
		cancel()
		if err == nil && !listsZoneServers(env, ws.ParseResolvectlStatus(out)) {
			return configureCommand(env)
		}
	}
	return resetCommands(env, "")
}

// listsZoneServers: some link (or the global section) lists one of the zone's servers.
func listsZoneServers(env Env, links []ws.ResolvedLink) bool {
	for _, l := range links {
		if containsAny(env.Target.Servers, l.Servers...) {
			return true
		}
	}
	return len(links) == 0 // unreadable output: say nothing new
}
