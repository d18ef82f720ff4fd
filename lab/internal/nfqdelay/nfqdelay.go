// Package nfqdelay adds real latency to packets with an iptables NFQUEUE target: the kernel
// hands each queued packet's id to this process over netfilter netlink, and the packet leaves
// only when we return the ACCEPT verdict, d later. The lab uses it because the kernel here has
// no sch_netem (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown").
//
// The protocol (linux/netfilter/nfnetlink_queue.h) is small enough to speak directly: bind a
// queue, ask for metadata only, read NFQNL_MSG_PACKET, write NFQNL_MSG_VERDICT.
package nfqdelay

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	subsysQueue    = 3
	msgPacket      = 0
	msgVerdict     = 1
	msgConfig      = 2
	cfgCmd         = 1
	cfgParams      = 2
	cfgMask        = 4
	cfgFlags       = 5
	cmdBind        = 1
	copyMeta       = 1
	attrPacketHdr  = 1
	attrVerdictHdr = 2
	nfAccept       = 1
	flagFailOpen   = 1
)

// Delayer holds one bound queue.
type Delayer struct {
	fd    int
	queue uint16
	delay time.Duration
	mu    sync.Mutex // serialises writes to the socket
	seq   uint32
}

// Open binds queue number queue (in the caller's network namespace).
func Open(queue uint16, delay time.Duration) (*Delayer, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netfilter netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("bind netlink: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	d := &Delayer{fd: fd, queue: queue, delay: delay}
	bind := make([]byte, 4)
	bind[0] = cmdBind
	binary.BigEndian.PutUint16(bind[2:], unix.AF_INET)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = copyMeta
	// Fail open: if the queue overflows, packets pass rather than drop (latency, not loss).
	flags := make([]byte, 4)
	binary.BigEndian.PutUint32(flags, flagFailOpen)
	for _, attrs := range [][]attr{
		{{cfgCmd, bind}},
		{{cfgParams, params}},
		{{cfgFlags, flags}, {cfgMask, flags}},
	} {
		if err := d.request(msgConfig, attrs); err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("configure queue %d: %w", queue, err)
		}
	}
	return d, nil
}

// Close releases the queue; the kernel then lets packets through (--queue-bypass).
func (d *Delayer) Close() error { return unix.Close(d.fd) }

// Run reads queued packets and accepts each one after the delay, until ctx ends.
func (d *Delayer) Run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		// Unblocks Recvfrom.
		_ = unix.Shutdown(d.fd, unix.SHUT_RDWR)
	}()
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read queue %d: %w", d.queue, err)
		}
		for _, id := range packetIDs(buf[:n]) {
			time.AfterFunc(d.delay, func() { _ = d.verdict(id) })
		}
	}
}

type attr struct {
	typ  uint16
	data []byte
}

func (d *Delayer) message(msg uint16, flags uint16, attrs []attr) ([]byte, error) {
	body := []byte{unix.AF_UNSPEC, 0, 0, 0} // nfgenmsg: family, version, res_id (big endian)
	binary.BigEndian.PutUint16(body[2:], d.queue)
	for _, a := range attrs {
		// An attribute's length is a 16-bit field; the message's, 32 bits.
		l := 4 + len(a.data)
		if l > math.MaxUint16 {
			return nil, fmt.Errorf("netlink attribute %d: %d bytes is too long", a.typ, l)
		}
		h := make([]byte, 4)
		binary.LittleEndian.PutUint16(h, uint16(l))
		binary.LittleEndian.PutUint16(h[2:], a.typ)
		body = append(body, h...)
		body = append(body, a.data...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
	}
	total := 16 + len(body)
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("netlink message: %d bytes is too long", total)
	}
	d.seq++
	hdr := make([]byte, 16, total)
	binary.LittleEndian.PutUint32(hdr, uint32(total))
	binary.LittleEndian.PutUint16(hdr[4:], subsysQueue<<8|msg)
	binary.LittleEndian.PutUint16(hdr[6:], flags)
	binary.LittleEndian.PutUint32(hdr[8:], d.seq)
	return append(hdr, body...), nil
}

// request sends a config message and waits for the kernel's ack.
func (d *Delayer) request(msg uint16, attrs []attr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, err := d.message(msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs)
	if err != nil {
		return err
	}
	if err := unix.Sendto(d.fd, m, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(d.fd, buf, 0)
	if err != nil {
		return err
	}
	if n >= 20 && binary.LittleEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		// struct nlmsgerr: a signed int, 0 for an ack, else minus the errno.
		var code int32
		if err := binary.Read(bytes.NewReader(buf[16:20]), binary.LittleEndian, &code); err != nil {
			return err
		}
		if code < 0 {
			return unix.Errno(-int64(code))
		}
	}
	return nil
}

func (d *Delayer) verdict(id uint32) error {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v, nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	d.mu.Lock()
	defer d.mu.Unlock()
	m, err := d.message(msgVerdict, unix.NLM_F_REQUEST, []attr{{attrVerdictHdr, v}})
	if err != nil {
		return err
	}
	return unix.Sendto(d.fd, m, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// packetIDs extracts the packet ids of the NFQNL_MSG_PACKET messages in a netlink datagram.
func packetIDs(b []byte) []uint32 {
	var ids []uint32
	for len(b) >= 16 {
		l := int(binary.LittleEndian.Uint32(b))
		if l < 16 || l > len(b) {
			break
		}
		typ := binary.LittleEndian.Uint16(b[4:])
		if typ == subsysQueue<<8|msgPacket && l >= 20 {
			attrs := b[20:l] // after nlmsghdr (16) and nfgenmsg (4)
			for len(attrs) >= 4 {
				al := int(binary.LittleEndian.Uint16(attrs))
				at := binary.LittleEndian.Uint16(attrs[2:]) & 0x3fff
				if al < 4 || al > len(attrs) {
					break
				}
				if at == attrPacketHdr && al >= 8 {
					ids = append(ids, binary.BigEndian.Uint32(attrs[4:]))
				}
				step := (al + 3) &^ 3
				if step > len(attrs) {
					break
				}
				attrs = attrs[step:]
			}
		}
		b = b[(l+3)&^3:]
	}
	return ids
}
