package netpath

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// errNoProbes is an environment built without probers: a wiring bug, not a cluster fault.
var errNoProbes = errors.New("no network probers in the environment (Env.Probes is nil)")

// dnsPath gathers what every DNS check needs, or says why the check cannot run.
func dnsPath(env *Env) (*Path, []Target, engine.Outcome, bool) {
	if env.Probes == nil {
		return nil, nil, engine.Outcome{Err: errNoProbes}, false
	}
	p := &env.Path
	if len(p.DNS) == 0 {
		return nil, nil, engine.Outcome{Skip: p.NoDNS}, false
	}
	return p, p.DNS, engine.Outcome{}, true
}

// nameResult is one question's outcome at one address.
type nameResult struct {
	name  string
	reply *probe.DNSReply
	err   error
	// proof: the question that proves the address failed (err is the address's).
	proof bool
}

// randomLabel returns a name under zone that no route defines, to prove the template answers
// any name ("lanaccess-probe-k3j9x2ab.apps.example.com").
func randomLabel(zone string) string {
	return "lanaccess-probe-" + strings.ToLower(rand.Text()[:8]) + "." + zone
}

// netEachTarget runs fn for every target concurrently and returns the results in target order.
// The probe Set bounds how many probes are in flight and short-cuts dead addresses, so a
// target that does not answer costs one timeout whatever the number of questions.
func netEachTarget[T any](ctx context.Context, targets []Target, fn func(context.Context, Target) T) []T {
	out := make([]T, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			out[i] = fn(ctx, t)
		})
	}
	wg.Wait()
	return out
}

// netUnreachable turns a probe error on a target into a FAIL finding: a workstation given this
// address meets the same error. A dead address is said once, whatever was being asked.
func netUnreachable(id string, t Target, what string, err error, ev map[string]any) engine.Finding {
	ev["address"] = t.Addr.String()
	ev["error"] = err.Error()
	f := engine.Finding{Code: id + "-PROBE-ERROR", Severity: engine.SeverityFail, Object: t.Object, Evidence: ev}
	switch {
	case probe.IsNotProbed(err), probe.IsNoAnswer(err):
		f.Code = id + "-NO-ANSWER"
		f.Message = fmt.Sprintf("%s gave no answer (%s): a workstation given this address waits, then retries elsewhere or fails", t.Addr.Addr(), what)
		a := t.Addr.Addr().String()
		f.Remediation = remedy.Commentf("# is the node up and is %s routed to it from this network?\n", a) + remedy.Command("ping", "-c", "3", a) + "\nkubectl get nodes -o wide | " + remedy.Command("grep", "-w", a)
	case probe.IsRefused(err):
		f.Code = id + "-REFUSED"
		f.Message = fmt.Sprintf("%s refused %s: the host is up but nothing takes port %d (kube-proxy does not capture it)", t.Addr.Addr(), what, t.Addr.Port())
		f.Remediation = "# kube-proxy captures externalIPs only for the Service's ports, on a node where kube-proxy runs:\nkubectl get svc -A -o wide | " + remedy.Command("grep", "-w", t.Addr.Addr().String()) + "\nkubectl -n kube-system get pods -l k8s-app=kube-proxy -o wide"
	default:
		f.Message = fmt.Sprintf("%s: %s failed: %v", t.Addr, what, err)
	}
	return f
}

// netInterrupted reports whether ctx ended: results gathered then are not a verdict.
func netInterrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("probes interrupted: %w", err)
	}
	return nil
}

// netNoneAnswered is ERROR, not FAIL, when not one address answered: from this machine nothing
// can be said about the setup (it may simply not be on the LAN).
// askedOutcome ends a check that asked every address: an error when none answered, else its
// findings and one summary (an information finding on the DNS Service, with per-address
// answers).
func askedOutcome(env *Env, p *Path, targets []Target, answered int, findings []engine.Finding, code, message string, ev map[string]any) engine.Outcome {
	if answered == 0 {
		return engine.Outcome{Findings: findings, Err: netNoneAnswered(targets, env.Probes.Timeout())}
	}
	findings = append(findings, engine.Finding{Code: code, Severity: engine.SeverityInfo, Object: p.DNSObject, Message: message, Evidence: p.hostEvidence(ev)})
	return engine.Outcome{Findings: findings}
}

func netNoneAnswered(targets []Target, timeout fmt.Stringer) error {
	return fmt.Errorf("none of the %d addresses (%s) answered from this machine within %s: is this machine on the LAN?",
		len(targets), probe.JoinAddrs(targetAddrs(targets)), timeout)
}
