package probe

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// DefaultTimeout bounds one probe when the user gave no --timeout.
const DefaultTimeout = 2 * time.Second

// dialTCP connects to target by address only (no name resolution, like curl --resolve), bounded
// by deadline and by ctx.
func dialTCP(ctx context.Context, target netip.AddrPort, deadline time.Time) (net.Conn, error) {
	d := net.Dialer{Deadline: deadline}
	return d.DialContext(ctx, "tcp", target.String())
}

// brokenConn is a connection the peer dropped mid-exchange: worth one more try, unlike a refusal
// or a timeout, which are the peer's answer.
func brokenConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
