package probetest

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// Hole is a blackhole's address and what reached it.
type Hole struct {
	Addr     netip.AddrPort
	contacts atomic.Int32
}

// Contacts counts UDP datagrams read and TCP connections accepted so far.
func (h *Hole) Contacts() int { return int(h.contacts.Load()) }

// Blackhole listens on one free port of ip over UDP and TCP, reads whatever comes and never
// answers: from the prober's side it is a node whose link is down (on loopback a closed port
// would refuse at once, which is a different, faster answer).
func Blackhole(t testing.TB, ip string) netip.AddrPort {
	t.Helper()
	return CountingBlackhole(t, ip).Addr
}

// CountingBlackhole is a Blackhole that counts what reached it, to prove a dead address was
// contacted once rather than once per question.
func CountingBlackhole(t testing.TB, ip string) *Hole {
	t.Helper()
	pc, ln, ap := listenPair(t, ip)
	hole := &Hole{Addr: ap}
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			hole.contacts.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hole.contacts.Add(1)
			mu.Lock()
			held = append(held, c) // kept open and silent until the test ends
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = pc.Close()
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return hole
}
