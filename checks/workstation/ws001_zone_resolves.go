package workstation

import (
	"context"
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
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
				Remediation: resetCommands(env, ""),
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
