package labkit

import (
	"context"
	"testing"
)

// Variants of the VPN's surroundings for issue 14's cases (faults/vpnvariants.go).

// SetLaptopClient restarts the laptop's OpenVPN client with extra configuration lines until
// cleanup (then with the lab's own configuration again).
func (l *Lab) SetLaptopClient(tb testing.TB, extra ...string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	err := l.faults.SetLaptopClient(ctx, extra...)
	cleanup(tb, "SetLaptopClient", func(ctx context.Context) error { return l.faults.SetLaptopClient(ctx) })
	must(tb, "restart the laptop's client", err)
}
