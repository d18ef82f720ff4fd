package probe

import (
	"context"
	"time"
)

// stepDeadline is the one home of "the earliest of the caller's deadline and now plus a step's own
// timeout": every network step has its own deadline, and never outlives its caller. It returns
// the earlier of ctx's deadline and start+timeout.
func stepDeadline(ctx context.Context, start time.Time, timeout time.Duration) time.Time {
	d := start.Add(timeout)
	if c, ok := ctx.Deadline(); ok && c.Before(d) {
		return c
	}
	return d
}
