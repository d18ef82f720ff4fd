//go:build linux

package facts

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// SendDF sends the padded question from a UDP socket with IP_MTU_DISCOVER = IP_PMTUDISC_DO:
// the kernel sets Don't Fragment and refuses (EMSGSIZE) what exceeds the path MTU it knows,
// which IP_MTU then reads.
func (NetProber) SendDF(ctx context.Context, to netip.AddrPort, size int) (SizeResult, error) {
	wire, id, actual, err := paddedQuestion("kubernetes.default.svc.cluster.local", size)
	r := SizeResult{Size: actual}
	if err != nil {
		return r, err
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, "udp4", to.String())
	if err != nil {
		return r, err
	}
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(mtuProbeLimit))
	}
	if _, err := conn.Write(wire); err != nil {
		if errors.Is(err, syscall.EMSGSIZE) {
			r.State, r.Detail, r.MTU = SizeTooBig, "message too long", pathMTU(conn)
			return r, nil
		}
		r.State, r.Detail = SizeSilent, err.Error()
		return r, nil
	}
	buf := make([]byte, 65535)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			r.State, r.Detail = SizeSilent, "no DNS answer within "+secs(mtuProbeLimit)+" s"
			return r, nil
		}
		var m dns.Msg
		if m.Unpack(buf[:n]) == nil && m.Id == id {
			r.State, r.Detail = SizePassed, dns.RcodeToString[m.Rcode]
			return r, nil
		}
	}
}

// pathMTU reads the socket's path MTU (IP_MTU), 0 when unreadable.
func pathMTU(conn net.Conn) int {
	uc, ok := conn.(*net.UDPConn)
	if !ok {
		return 0
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	mtu := 0
	_ = rc.Control(func(fd uintptr) { mtu, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU) })
	return mtu
}
