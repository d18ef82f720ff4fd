package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// NoAnswerError means nothing answered within the probe's deadline: no reply, no refusal, no
// ICMP error. It is the one failure that says "this address is dead from here", as opposed to
// a server that answered badly; the Set's liveness record keys on it.
type NoAnswerError struct {
	Target  netip.AddrPort
	Network string
	// What was asked, e.g. "A grafana.apps.example.com." or "TLS handshake".
	What   string
	Within time.Duration
	Err    error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("no answer from %s/%s within %s to %s: %v", e.Target, e.Network, e.Within.Round(time.Millisecond), e.What, e.Err)
}

func (e *NoAnswerError) Unwrap() error { return e.Err }

// NotProbedError is returned for an address whose first contact already got no answer in this
// run: asking again would only spend another timeout.
type NotProbedError struct {
	Addr  netip.Addr
	Cause *NoAnswerError
}

func (e *NotProbedError) Error() string {
	return fmt.Sprintf("not probed: %s gave no answer within %s (%s/%s, %s)", e.Addr,
		e.Cause.Within.Round(time.Millisecond), e.Cause.Target, e.Cause.Network, e.Cause.What)
}

func (e *NotProbedError) Unwrap() error { return e.Cause }

// IsNoAnswer reports whether err means the address did not answer at all, now or at its first
// contact in this run.
func IsNoAnswer(err error) bool {
	var na *NoAnswerError
	return errors.As(err, &na)
}

// IsNotProbed reports whether err is a probe skipped because the address was already dead.
func IsNotProbed(err error) bool {
	var np *NotProbedError
	return errors.As(err, &np)
}

// IsRefused reports whether the address answered with a refusal (TCP reset or ICMP port
// unreachable): the host is up but nothing listens on that port.
func IsRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// classify turns a transport error into the error a probe returns. The caller's ctx being done
// (Ctrl-C, the check's own deadline) is an interruption, never a verdict on the address; the
// probe's own deadline passing, or no route to the host, is a NoAnswerError.
func classify(ctx context.Context, err error, target netip.AddrPort, network, what string, within time.Duration) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s to %s/%s interrupted: %w", what, target, network, ctx.Err())
	}
	if isTimeout(err) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return &NoAnswerError{Target: target, Network: network, What: what, Within: within, Err: err}
	}
	return fmt.Errorf("%s to %s/%s: %w", what, target, network, err)
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ETIMEDOUT) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
