package workstation

import (
	"context"
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// outsideStillResolves (WS002): the setup must change nothing but the zone. A name outside it
// still resolves, and not to the node addresses (which would mean the zone's DNS answers every
// name: a template without a zone in its '.' block).
func outsideStillResolves(s *session) engine.Check {
	return catalogue.Check("WS002", func(ctx context.Context) engine.Outcome {
		env := s.env
		r := s.lookup(ctx, env.OutsideName)
		object := "name " + r.name
		evidence := map[string]any{"name": r.name, "tookMs": r.took.Milliseconds()}
		if r.err != nil {
			msg, interrupted := lookupFailure(ctx, r)
			if interrupted {
				return engine.Outcome{Err: fmt.Errorf("looking up %s: %w", r.name, ctx.Err())}
			}
			evidence["error"] = r.err.Error()
			return engine.Outcome{Findings: []engine.Finding{{Code: "WS002-NOT-RESOLVED", Severity: engine.SeverityFail,
				Object: object,
				Message: msg + ": names outside " + env.Target.Zone.String() + " no longer resolve. Where this machine sends every name to the zone's servers " +
					"(a Linux link whose current server is one of them), their '.' block must forward; check also that the name exists (--outside-name)",
				Evidence:    evidence,
				Remediation: "kubectl lanaccess doctor --only LA303   # from a machine with cluster access: does the zone's DNS forward?",
			}}}
		}
		evidence["got"] = probe.AddrStrings(r.addrs)
		if hijacked := filterIn(r.addrs, env.Target.Answers); len(hijacked) > 0 {
			return engine.Outcome{Findings: []engine.Finding{{Code: "WS002-HIJACKED", Severity: engine.SeverityFail,
				Object: object,
				Message: fmt.Sprintf("%s, outside the zone, resolves to the node address(es) %s: the zone's DNS answers names it does not own (a template without a zone in the '.' block)",
					r.name, probe.JoinAddrs(hijacked)),
				Evidence:    withList(evidence, "nodeAddresses", hijacked),
				Remediation: "kubectl lanaccess doctor --only LA104   # from a machine with cluster access: the Corefile's '.' block",
			}}}
		}
		return engine.Outcome{Findings: []engine.Finding{{Code: "WS002-RESOLVES", Severity: engine.SeverityInfo,
			Object:   object,
			Message:  fmt.Sprintf("%s resolves to %s", r.name, probe.JoinAddrs(r.addrs)),
			Evidence: evidence,
		}}}
	})
}
