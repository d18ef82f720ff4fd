package probe

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStepDeadlineTakesTheCallersDeadlineWhenItComesFirst(t *testing.T) {
	start := time.Now()
	assert.Equal(t, start.Add(2*time.Second), stepDeadline(context.Background(), start, 2*time.Second))
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(time.Second))
	defer cancel()
	assert.Equal(t, start.Add(time.Second), stepDeadline(ctx, start, 2*time.Second))
	assert.Equal(t, start.Add(500*time.Millisecond), stepDeadline(ctx, start, 500*time.Millisecond))
}
