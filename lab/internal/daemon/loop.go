package daemon

import (
	"context"
	"log"
	"time"
)

// loop runs fn on every kick (coalesced over 100 ms) and every resync period.
func loop(ctx context.Context, kick <-chan struct{}, fn func() error, logger *log.Logger, name string) {
	tick := time.NewTicker(resync)
	defer tick.Stop()
	last := ""
	for {
		err := fn()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != last && msg != "" {
			logger.Printf("%s: %v", name, err)
		}
		last = msg
		select {
		case <-ctx.Done():
			return
		case <-kick:
			time.Sleep(100 * time.Millisecond)
		case <-tick.C:
		}
	}
}
