package probe

import (
	"context"
	"errors"
	"net/netip"
	"sync"
)

// Liveness remembers, per address and port (UDP and TCP alike), whether anything answered in
// this run. The first probe to an address:port is its first contact; probes to the same one that
// arrive meanwhile wait for its verdict instead of spending their own timeout. Once it gave no
// answer, every later probe to it returns a NotProbedError at once. This is what makes a dead node
// cost one timeout per run rather than one per query, whichever checks ask and in whatever order
// (DNS on :53 and HTTPS on :443 are asked concurrently by different checks).
//
// The port is part of the key because kube-proxy sends each Service port to its own pods: with
// the proxy pod's node down, :443 of every address is silent while :53 still answers, and the
// address must not be written off for DNS.
//
// An address that answered once stays alive for the run: a later timeout to it is a real,
// per-query failure (a hung DNS server behind a live node), reported as such.
//
// Only probes that prove the address decide: a DNS question the server answers through another
// server (a name it forwards, CoreDNS's forward plugin waiting out its own upstream timeouts)
// may go unanswered from a perfectly live address, so its silence never marks the address dead
// (DoUndecided).
type Liveness struct {
	mu    sync.Mutex
	addrs map[netip.AddrPort]*addrState
}

type addrState struct {
	alive bool
	dead  *NotProbedError
	// contact is non-nil while a first contact is in flight; it is closed when it ends.
	contact chan struct{}
}

// NewLiveness returns an empty record.
func NewLiveness() *Liveness {
	return &Liveness{addrs: map[netip.AddrPort]*addrState{}}
}

// Do runs probe against addr unless addr is already known dead, waiting for an in-flight first
// contact first. The probe's NoAnswerError marks addr dead; any other outcome (a reply, a
// refusal, a malformed answer) marks it alive, except an interruption, which says nothing about
// the address.
func (l *Liveness) Do(ctx context.Context, addr netip.AddrPort, probe func(context.Context) error) error {
	return l.do(ctx, addr, true, probe)
}

// DoUndecided runs probe against addr unless addr is known dead, like Do, but its outcome
// never decides whether addr is alive: when no deciding contact happened yet, it runs alone.
func (l *Liveness) DoUndecided(ctx context.Context, addr netip.AddrPort, probe func(context.Context) error) error {
	return l.do(ctx, addr, false, probe)
}

func (l *Liveness) do(ctx context.Context, addr netip.AddrPort, decides bool, probe func(context.Context) error) error {
	for {
		l.mu.Lock()
		st := l.addrs[addr]
		if st == nil {
			st = &addrState{}
			l.addrs[addr] = st
		}
		switch {
		case st.dead != nil:
			dead := *st.dead
			l.mu.Unlock()
			return &dead
		case st.alive:
			l.mu.Unlock()
			return probe(ctx)
		case st.contact != nil:
			wait := st.contact
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		case !decides:
			l.mu.Unlock()
			return probe(ctx)
		}
		st.contact = make(chan struct{})
		l.mu.Unlock()
		return l.firstContact(ctx, addr, st, probe)
	}
}

func (l *Liveness) firstContact(ctx context.Context, addr netip.AddrPort, st *addrState, probe func(context.Context) error) error {
	returned := false
	defer func() {
		if !returned {
			// The probe panicked (the engine turns a check's panic into its error and goes
			// on): the verdict stays unknown, and the waiters must not wait for it forever.
			l.mu.Lock()
			close(st.contact)
			st.contact = nil
			l.mu.Unlock()
		}
	}()
	err := probe(ctx)
	returned = true
	l.mu.Lock()
	defer l.mu.Unlock()
	var na *NoAnswerError
	switch {
	case errors.As(err, &na):
		st.dead = &NotProbedError{Addr: addr.Addr(), Cause: na}
	case ctx.Err() != nil:
		// Interrupted: the verdict stays unknown and a waiter may make its own first contact.
	default:
		st.alive = true
	}
	close(st.contact)
	st.contact = nil
	return err
}

// Dead returns the recorded verdict for addr:port when it gave no answer, else nil.
func (l *Liveness) Dead(addr netip.AddrPort) *NotProbedError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.addrs[addr]; st != nil && st.dead != nil {
		dead := *st.dead
		return &dead
	}
	return nil
}
