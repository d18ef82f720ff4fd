package facts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// readForwarding reads /proc/sys/net/ipv4/ip_forward with cat, else asks sysctl; an image
// with neither is an error that says so, never a guess. The value is per network namespace:
// the node's setting says nothing about the pod's.
func (g *Gatherer) readForwarding(ctx context.Context, m *podMemos) (Forwarding, error) {
	attempts := [][]string{{"cat", "/proc/sys/net/ipv4/ip_forward"}, {"sysctl", "-n", "net.ipv4.ip_forward"}}
	var missing []string
	var lastMissing error
	for _, cmd := range attempts {
		out, _, err := g.exec(ctx, m, cmd, g.execTimeout())
		if podexec.IsToolMissing(err) {
			var tm *podexec.ToolMissingError
			errors.As(err, &tm)
			missing = append(missing, tm.Tool)
			lastMissing = err
			if tm.Tool == "sh" {
				break // nothing runs without the shell that bounds commands
			}
			continue
		}
		if err != nil {
			return Forwarding{}, fmt.Errorf("reading ip_forward in %s: %w", m.object(), err)
		}
		v := strings.TrimSpace(out)
		if v != "0" && v != "1" {
			return Forwarding{}, fmt.Errorf("reading ip_forward in %s: %q printed %q, not 0 or 1", m.object(), strings.Join(cmd, " "), v)
		}
		return Forwarding{Value: v, Method: strings.Join(cmd, " ")}, nil
	}
	return Forwarding{}, &missingToolsError{
		msg:   fmt.Sprintf("cannot read ip_forward in %s: the image of container %s has no %s", m.object(), m.container, strings.Join(missing, ", no ")),
		cause: lastMissing,
	}
}

// missingToolsError says every way of reading something needed a program the image lacks; it
// unwraps to the last *podexec.ToolMissingError so callers can tell it from a broken exec.
type missingToolsError struct {
	msg   string
	cause error
}

func (e *missingToolsError) Error() string { return e.msg }
func (e *missingToolsError) Unwrap() error { return e.cause }
