package vpn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// VPNForwarding is VPN002: net.ipv4.ip_forward inside each VPN pod's network namespace. The
// value is per namespace: the node's setting says nothing about the pod's.
func VPNForwarding(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN002", func(ctx context.Context) engine.Outcome { return t.forwardingOutcome(ctx) })
}

// forwardingFact is ip_forward as read in one pod, and how it was read.
type forwardingFact struct {
	Value  string // "0" or "1"
	Method string
}

// podForwarding reads /proc/sys/net/ipv4/ip_forward with cat, else asks sysctl; an image with
// neither is an error that says so, never a guess.
func (t *vpnTrace) podForwarding(ctx context.Context, p *vpnPod) (forwardingFact, error) {
	return p.forwarding.get(ctx, func(ctx context.Context) (forwardingFact, error) {
		attempts := [][]string{{"cat", "/proc/sys/net/ipv4/ip_forward"}, {"sysctl", "-n", "net.ipv4.ip_forward"}}
		var missing []string
		var lastMissing error
		for _, cmd := range attempts {
			out, _, err := t.exec(ctx, p, cmd, execTimeout)
			if kube.IsToolMissing(err) {
				var tm *kube.ToolMissingError
				errors.As(err, &tm)
				missing = append(missing, tm.Tool)
				lastMissing = err
				if tm.Tool == "sh" {
					break // nothing runs without the shell that bounds commands
				}
				continue
			}
			if err != nil {
				return forwardingFact{}, fmt.Errorf("reading ip_forward in %s: %w", p.object(), err)
			}
			v := strings.TrimSpace(out)
			if v != "0" && v != "1" {
				return forwardingFact{}, fmt.Errorf("reading ip_forward in %s: %q printed %q, not 0 or 1", p.object(), strings.Join(cmd, " "), v)
			}
			return forwardingFact{Value: v, Method: strings.Join(cmd, " ")}, nil
		}
		return forwardingFact{}, &missingToolsError{
			msg:   fmt.Sprintf("cannot read ip_forward in %s: the image of container %s has no %s", p.object(), p.Container, strings.Join(missing, ", no ")),
			cause: lastMissing,
		}
	})
}

// missingToolsError says every way of reading something needed a program the image lacks; it
// unwraps to the last *kube.ToolMissingError so callers can tell it from a broken exec.
type missingToolsError struct {
	msg   string
	cause error
}

func (e *missingToolsError) Error() string { return e.msg }
func (e *missingToolsError) Unwrap() error { return e.cause }

func (t *vpnTrace) forwardingOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	type res struct {
		f   forwardingFact
		err error
	}
	rs := forEachPod(ctx, pods.Running, func(ctx context.Context, p *vpnPod) res {
		f, err := t.podForwarding(ctx, p)
		return res{f, err}
	})
	var fs []engine.Finding
	var errs []error
	for i, r := range rs {
		p := pods.Running[i]
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
			if kube.IsToolMissing(r.err) {
				fs = append(fs, engine.Finding{Code: "VPN002-NO-TOOL", Severity: engine.SeverityWarn, Object: p.object(), Message: r.err.Error() + "; an ephemeral debug container shares the pod's network namespace and can read it",
					Remediation: fmt.Sprintf("kubectl -n %s debug %s -it --image=busybox:1.36.1 --target=%s -- cat /proc/sys/net/ipv4/ip_forward", p.Ref.Namespace, p.Ref.Name, p.Container)})
			}
		case r.f.Value == "0":
			fs = append(fs, engine.Finding{Code: "VPN002-OFF", Severity: engine.SeverityFail, Object: p.object(),
				Message:     "net.ipv4.ip_forward = 0 in the pod's network namespace: client packets arrive through the tunnel and the kernel refuses to route them on, so only the tunnel peer answers",
				Evidence:    map[string]any{"ip_forward": r.f.Value, "readWith": r.f.Method, "node": p.Pod.Spec.NodeName},
				Remediation: fmt.Sprintf("# immediate, lost at the next restart (the durable change is in VPN008):\nkubectl -n %s exec %s -c %s -- sysctl -w net.ipv4.ip_forward=1", p.Ref.Namespace, p.Ref.Name, p.Container)})
		default:
			fs = append(fs, engine.Finding{Code: "VPN002-ON", Severity: engine.SeverityInfo, Object: p.object(), Message: "net.ipv4.ip_forward = 1",
				Evidence: map[string]any{"ip_forward": r.f.Value, "readWith": r.f.Method, "node": p.Pod.Spec.NodeName}})
		}
	}
	if len(errs) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: errors.Join(errs...)}
	}
	return engine.Outcome{Findings: fs}
}
