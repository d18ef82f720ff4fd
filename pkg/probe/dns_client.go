package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// DefaultEDNSBufferSize is the EDNS0 UDP payload size advertised (the DNS flag day 2020 value,
// which avoids IP fragmentation): larger answers come back truncated and are asked over TCP.
const DefaultEDNSBufferSize = 1232

// DNSClient is the real DNS prober. It builds its own exchange on miekg/dns messages rather than
// dns.Client because it needs what dns.Client does not give: cancellation that closes the socket
// at once (Ctrl-C), a UDP retransmission inside one deadline, and a count of replies with a wrong
// message ID instead of silently dropping them.
type DNSClient struct {
	// Timeout bounds one query, retransmission and TCP retry included.
	Timeout time.Duration
	// BufferSize is the EDNS0 UDP payload size; zero means DefaultEDNSBufferSize.
	BufferSize uint16
	// ReuseSockets keeps a UDP socket per server after a clean exchange (one question, one
	// matching reply) for the next question to that server, up to maxIdleUDP per server: a
	// run asks each address a dozen questions, and opening a socket costs more than asking.
	// CloseIdle closes them.
	ReuseSockets bool

	mu   sync.Mutex
	idle map[netip.AddrPort][]*udpSocket
}

// maxIdleUDP bounds the sockets kept per server (about the probes in flight to one address).
const maxIdleUDP = 4

// udpSocket is a connected UDP socket and the IDs of the last questions it carried: a late
// duplicate of one of their answers may still arrive, even after the answer to a later question
// (the server answers each question on its own goroutine, miekg/dns serveUDP), and is not a
// wrong reply to the next question.
type udpSocket struct {
	conn  net.Conn
	asked []uint16 // the IDs of earlier questions, newest last, at most maxAskedIDs
}

// maxAskedIDs bounds the earlier questions' IDs a kept socket remembers.
const maxAskedIDs = 8

// earlier reports whether id is that of an earlier question on the socket.
func (s *udpSocket) earlier(id uint16) bool { return slices.Contains(s.asked, id) }

// remember records the ID of a question the socket carried.
func (s *udpSocket) remember(id uint16) {
	if len(s.asked) == maxAskedIDs {
		s.asked = slices.Delete(s.asked, 0, 1)
	}
	s.asked = append(s.asked, id)
}

func (c *DNSClient) takeUDP(ctx context.Context, server netip.AddrPort, deadline time.Time) (*udpSocket, error) {
	if c.ReuseSockets {
		c.mu.Lock()
		if list := c.idle[server]; len(list) > 0 {
			sock := list[len(list)-1]
			c.idle[server] = list[:len(list)-1]
			c.mu.Unlock()
			return sock, nil
		}
		c.mu.Unlock()
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "udp", server.String())
	if err != nil {
		return nil, err
	}
	return &udpSocket{conn: conn}, nil
}

func (c *DNSClient) putUDP(server netip.AddrPort, sock *udpSocket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = map[netip.AddrPort][]*udpSocket{}
	}
	if len(c.idle[server]) >= maxIdleUDP {
		_ = sock.conn.Close()
		return
	}
	c.idle[server] = append(c.idle[server], sock)
}

// CloseIdle closes the sockets kept by ReuseSockets.
func (c *DNSClient) CloseIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, list := range c.idle {
		for _, sock := range list {
			_ = sock.conn.Close()
		}
		delete(c.idle, server)
	}
}

// Query asks qtype for name of server over network ("udp" or "tcp"). Over UDP the question is
// sent again once if half the deadline passes without a matching reply, and a truncated reply
// is asked again over TCP. A reply whose ID or question does not match is an error over TCP; over
// UDP it is ignored (it may be a late answer to someone else), counted, and reported if no
// matching reply follows.
func (c *DNSClient) Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*DNSReply, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = true
	size := c.BufferSize
	if size == 0 {
		size = DefaultEDNSBufferSize
	}
	q.SetEdns0(size, false)
	what := TypeName(qtype) + " " + q.Question[0].Name

	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	start := time.Now()
	deadline := stepDeadline(ctx, start, timeout)

	switch network {
	case "udp":
		reply, err := c.exchangeUDP(ctx, q, server, deadline, size)
		if err != nil {
			return nil, classify(ctx, err, server, "udp", what, deadline.Sub(start))
		}
		if !reply.Msg.Truncated {
			reply.RTT = time.Since(start)
			return reply, nil
		}
		full, err := exchangeTCP(ctx, q, server, deadline)
		if err != nil {
			return nil, classify(ctx, fmt.Errorf("after a truncated UDP answer: %w", err), server, "tcp", what, deadline.Sub(start))
		}
		full.Truncated, full.Attempts, full.MismatchedIDs = true, reply.Attempts, reply.MismatchedIDs
		full.RTT = time.Since(start)
		return full, nil
	case "tcp":
		reply, err := exchangeTCP(ctx, q, server, deadline)
		if err != nil {
			return nil, classify(ctx, err, server, "tcp", what, deadline.Sub(start))
		}
		reply.RTT = time.Since(start)
		return reply, nil
	default:
		return nil, fmt.Errorf("DNS query to %s: unknown network %q (want udp or tcp)", server, network)
	}
}

// WrongIDError is a reply that did not belong to the query: another message ID or question.
type WrongIDError struct {
	Want, Got uint16
	Question  string
}

func (e *WrongIDError) Error() string {
	return fmt.Sprintf("reply does not match the query: message ID %d (sent %d), question %q", e.Got, e.Want, e.Question)
}

func (c *DNSClient) exchangeUDP(ctx context.Context, q *dns.Msg, server netip.AddrPort, deadline time.Time, size uint16) (*DNSReply, error) {
	sock, err := c.takeUDP(ctx, server, deadline)
	if err != nil {
		return nil, err
	}
	conn := sock.conn
	keep := false
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer func() {
		// Kept only after a clean exchange, and only if the cancel did not close it.
		if stop() && keep {
			sock.remember(q.Id)
			c.putUDP(server, sock)
			return
		}
		_ = conn.Close()
	}()

	co := &dns.Conn{Conn: conn, UDPSize: size}
	if err := conn.SetWriteDeadline(deadline); err != nil {
		return nil, err
	}
	if err := co.WriteMsg(q); err != nil {
		return nil, err
	}
	reply := &DNSReply{Server: server, Network: "udp", Attempts: 1}
	if err := readUDPReply(ctx, co, sock, q, deadline, reply); err != nil {
		return nil, err
	}
	keep = c.ReuseSockets && reply.Attempts == 1 && reply.MismatchedIDs == 0
	return reply, nil
}

// readUDPReply reads the answer to q into reply, sending q once more when half the time has
// passed without one. Replies that do not match q are counted and skipped; when nothing else
// comes, the last of them is the error.
func readUDPReply(ctx context.Context, co *dns.Conn, sock *udpSocket, q *dns.Msg, deadline time.Time, reply *DNSReply) error {
	retryAt := time.Now().Add(time.Until(deadline) / 2)
	var mismatch *WrongIDError
	for {
		readBy := deadline
		if reply.Attempts == 1 {
			readBy = retryAt
		}
		if err := co.SetReadDeadline(readBy); err != nil {
			return err
		}
		m, err := co.ReadMsg()
		if err != nil {
			if isTimeout(err) && reply.Attempts == 1 && ctx.Err() == nil {
				reply.Attempts++
				if werr := co.WriteMsg(q); werr != nil {
					return werr
				}
				continue
			}
			return udpReadError(err, m, mismatch)
		}
		if m.Id != q.Id && sock.earlier(m.Id) {
			continue // a late copy of an earlier answer on this socket
		}
		if bad := mismatched(q, m); bad != nil {
			reply.MismatchedIDs++
			mismatch = bad
			continue
		}
		reply.Msg = m
		return nil
	}
}

// udpReadError is what a failed read means: the mismatched reply when only those came, a
// malformed reply when one arrived but did not parse, else the read's own error.
func udpReadError(err error, m *dns.Msg, mismatch *WrongIDError) error {
	if isTimeout(err) && mismatch != nil {
		return mismatch
	}
	if m != nil {
		return fmt.Errorf("malformed reply: %w", err)
	}
	return err
}

// exchangeTCP asks over TCP, retrying once on a connection that broke before the answer (reset
// or closed by the server), never on a refusal or a timeout: those are the answer.
func exchangeTCP(ctx context.Context, q *dns.Msg, server netip.AddrPort, deadline time.Time) (*DNSReply, error) {
	reply, err := exchangeTCPOnce(ctx, q, server, deadline)
	if err != nil && ctx.Err() == nil && brokenConn(err) && time.Now().Before(deadline) {
		reply, err = exchangeTCPOnce(ctx, q, server, deadline)
		if reply != nil {
			reply.Attempts = 2
		}
	}
	return reply, err
}

func exchangeTCPOnce(ctx context.Context, q *dns.Msg, server netip.AddrPort, deadline time.Time) (*DNSReply, error) {
	conn, err := dialTCP(ctx, server, deadline)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	co := &dns.Conn{Conn: conn}
	if err := co.WriteMsg(q); err != nil {
		return nil, err
	}
	m, err := co.ReadMsg()
	if err != nil {
		return nil, err
	}
	if bad := mismatched(q, m); bad != nil {
		return nil, bad
	}
	return &DNSReply{Server: server, Network: "tcp", Attempts: 1, Msg: m}, nil
}

func mismatched(q, m *dns.Msg) *WrongIDError {
	question := ""
	if len(m.Question) > 0 {
		question = m.Question[0].Name + " " + TypeName(m.Question[0].Qtype)
	}
	if m.Id != q.Id || len(m.Question) != 1 ||
		!strings.EqualFold(m.Question[0].Name, q.Question[0].Name) || m.Question[0].Qtype != q.Question[0].Qtype {
		return &WrongIDError{Want: q.Id, Got: m.Id, Question: question}
	}
	return nil
}
