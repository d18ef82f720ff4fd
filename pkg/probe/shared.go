package probe

import (
	"context"
	"sync"
)

// sharedCalls makes one call per key in a run: the askers of a key in flight wait for its
// outcome, and later askers get it as well. A call whose asker's context ended, or that
// panicked, is not an answer: it is forgotten, and the next asker makes its own.
type sharedCalls[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*sharedCall[V]
}

type sharedCall[V any] struct {
	done      chan struct{}
	v         V
	err       error
	forgotten bool
}

// do returns key's outcome, calling fn when no asker did yet. Every asker gets the same V:
// the caller copies what an asker may change.
func (s *sharedCalls[K, V]) do(ctx context.Context, key K, fn func() (V, error)) (V, error) {
	for {
		s.mu.Lock()
		if s.calls == nil {
			s.calls = map[K]*sharedCall[V]{}
		}
		c, found := s.calls[key]
		if !found {
			c = &sharedCall[V]{done: make(chan struct{})}
			s.calls[key] = c
		}
		s.mu.Unlock()
		if !found {
			s.call(ctx, key, c, fn)
			return c.v, c.err
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if !c.forgotten {
			return c.v, c.err
		}
	}
}

// call runs fn for c and releases its waiters, also when fn panics (the panic goes on up).
func (s *sharedCalls[K, V]) call(ctx context.Context, key K, c *sharedCall[V], fn func() (V, error)) {
	returned := false
	defer func() {
		if !returned || ctx.Err() != nil {
			c.forgotten = true
			s.mu.Lock()
			delete(s.calls, key)
			s.mu.Unlock()
		}
		close(c.done)
	}()
	c.v, c.err = fn()
	returned = true
}
