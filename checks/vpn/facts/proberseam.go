package facts

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// CallRecorder keeps what each call of a seam was asked and answered (pkg/replay's Recorder).
type CallRecorder interface {
	Call(method string, args, result any, err error)
}

// CallPlayer answers a call of a seam from a recording, result being a pointer (pkg/replay's
// Player); a call the recording does not hold is an error naming it.
type CallPlayer interface {
	Call(method string, args, result any) error
}

// The arguments of the prober's calls as a recording keeps them: what each method was asked.
type (
	connectArgs struct {
		To netip.AddrPort `json:"to"`
	}
	queryArgs struct {
		Server netip.AddrPort `json:"server"`
		Name   string         `json:"name"`
	}
	resolveArgs struct {
		Name string `json:"name"`
	}
	sourceArgs struct {
		Dest netip.Addr `json:"dest"`
	}
	mtuArgs struct {
		Local netip.Addr `json:"local"`
	}
	sendDFArgs struct {
		To   netip.AddrPort `json:"to"`
		Size int            `json:"size"`
	}
)

// RecordingProber passes every call to next and keeps its question and answer in rec
// (--record): vpn-trace --from-client's ladder from this machine replays from them.
func RecordingProber(next ClientProber, rec CallRecorder) ClientProber {
	return recordingProber{next: next, rec: rec}
}

type recordingProber struct {
	next ClientProber
	rec  CallRecorder
}

func (p recordingProber) LocalAddrs() ([]netip.Addr, error) {
	addrs, err := p.next.LocalAddrs()
	p.rec.Call("prober.LocalAddrs", nil, addrs, err)
	return addrs, err
}

func (p recordingProber) Connect(ctx context.Context, to netip.AddrPort) error {
	err := p.next.Connect(ctx, to)
	p.rec.Call("prober.Connect", connectArgs{To: to}, nil, err)
	return err
}

func (p recordingProber) QueryA(ctx context.Context, server netip.AddrPort, name string) (string, error) {
	rcode, err := p.next.QueryA(ctx, server, name)
	p.rec.Call("prober.QueryA", queryArgs{Server: server, Name: name}, rcode, err)
	return rcode, err
}

func (p recordingProber) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	addrs, err := p.next.Resolve(ctx, name)
	p.rec.Call("prober.Resolve", resolveArgs{Name: name}, addrs, err)
	return addrs, err
}

func (p recordingProber) RoutingTable() (string, error) {
	table, err := p.next.RoutingTable()
	p.rec.Call("prober.RoutingTable", nil, table, err)
	return table, err
}

func (p recordingProber) SourceFor(dest netip.Addr) (netip.Addr, error) {
	src, err := p.next.SourceFor(dest)
	p.rec.Call("prober.SourceFor", sourceArgs{Dest: dest}, src, err)
	return src, err
}

func (p recordingProber) InterfaceMTU(local netip.Addr) (int, error) {
	mtu, err := p.next.InterfaceMTU(local)
	p.rec.Call("prober.InterfaceMTU", mtuArgs{Local: local}, mtu, err)
	return mtu, err
}

func (p recordingProber) SendDF(ctx context.Context, to netip.AddrPort, size int) (SizeResult, error) {
	r, err := p.next.SendDF(ctx, to, size)
	p.rec.Call("prober.SendDF", sendDFArgs{To: to, Size: size}, r, err)
	return r, err
}

// ReplayingProber answers every call from a recording (--replay): nothing is sent, and a
// question the recording does not hold fails naming it (the hop is then not proven, never
// answered).
func ReplayingProber(play CallPlayer) ClientProber { return &replayingProber{play: play} }

type replayingProber struct {
	play CallPlayer
	mu   sync.Mutex
	// missing is the first question the recording did not hold.
	missing error
}

// call asks the recording; a question it does not hold is kept for Unanswered.
func (p *replayingProber) call(method string, args, result any) error {
	err := p.play.Call(method, args, result)
	var nr interface{ NotRecorded() bool }
	if errors.As(err, &nr) && nr.NotRecorded() {
		p.mu.Lock()
		if p.missing == nil {
			p.missing = err
		}
		p.mu.Unlock()
	}
	return err
}

// Unanswered is the first question the recording did not hold (nil: it held every one): the
// ladder is then an error naming it, never a hop that was silent or answered.
func (p *replayingProber) Unanswered() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.missing == nil {
		return nil
	}
	return fmt.Errorf("the ladder from this machine asked what the replay bundle does not hold: %w", p.missing)
}

// unanswered is the error of a prober that could not answer every question (a replay's).
func unanswered(p ClientProber) error {
	if u, ok := p.(interface{ Unanswered() error }); ok {
		return u.Unanswered()
	}
	return nil
}

func (p *replayingProber) LocalAddrs() ([]netip.Addr, error) {
	var addrs []netip.Addr
	err := p.call("prober.LocalAddrs", nil, &addrs)
	return addrs, err
}

func (p *replayingProber) Connect(_ context.Context, to netip.AddrPort) error {
	return p.call("prober.Connect", connectArgs{To: to}, nil)
}

func (p *replayingProber) QueryA(_ context.Context, server netip.AddrPort, name string) (string, error) {
	var rcode string
	err := p.call("prober.QueryA", queryArgs{Server: server, Name: name}, &rcode)
	return rcode, err
}

func (p *replayingProber) Resolve(_ context.Context, name string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	err := p.call("prober.Resolve", resolveArgs{Name: name}, &addrs)
	return addrs, err
}

func (p *replayingProber) RoutingTable() (string, error) {
	var table string
	err := p.call("prober.RoutingTable", nil, &table)
	return table, err
}

func (p *replayingProber) SourceFor(dest netip.Addr) (netip.Addr, error) {
	var src netip.Addr
	err := p.call("prober.SourceFor", sourceArgs{Dest: dest}, &src)
	return src, err
}

func (p *replayingProber) InterfaceMTU(local netip.Addr) (int, error) {
	var mtu int
	err := p.call("prober.InterfaceMTU", mtuArgs{Local: local}, &mtu)
	return mtu, err
}

func (p *replayingProber) SendDF(_ context.Context, to netip.AddrPort, size int) (SizeResult, error) {
	r := SizeResult{Size: size}
	err := p.call("prober.SendDF", sendDFArgs{To: to, Size: size}, &r)
	return r, err
}
