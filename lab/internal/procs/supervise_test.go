package procs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the supervisor's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSuperviseRestartsAnExitedChildUntilCancelled(t *testing.T) {
	count := filepath.Join(t.TempDir(), "runs")
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() { done <- Supervise(ctx, []string{"sh", "-c", "echo x >> " + count + "; exit 1"}, &log) }()
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "x") >= 2
	}, 10*time.Second, 50*time.Millisecond, "the child ran again after it exited")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Supervise did not return after cancel")
	}
	assert.Contains(t, log.String(), "sh exited (exit status 1); restarting in 1s")
}
