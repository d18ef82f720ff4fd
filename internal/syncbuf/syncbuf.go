// Package syncbuf is a byte buffer that one goroutine writes (a process's stderr, a logger)
// while another reads it: the monitor's log, read by the tests and the benchmark as it runs.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent Write and String.
type Buffer struct {
	// Max, when above 0, bounds the buffer: once it holds more than Max bytes, further writes
	// are dropped (and reported as written, so that the writer goes on).
	Max int
	mu  sync.Mutex
	b   bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Max > 0 && s.b.Len() > s.Max {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
