package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// InterruptContext is cancelled by the first of sigs: the run stops, deletes its helper pods
// and closes its probes. A second signal restores the default behaviour, so it ends the
// process at once (whatever is left behind, `kubectl lanaccess cleanup` removes).
func InterruptContext(parent context.Context, errOut io.Writer, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			// Best effort: the process is stopping.
			_, _ = fmt.Fprintln(errOut, "\ninterrupted: cleaning up (interrupt again to exit at once)")
			signal.Reset(sigs...)
			cancel()
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(ch)
		cancel()
	}
}
