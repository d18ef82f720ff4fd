package labkit

import (
	"context"
	"testing"
)

// Variants of the VPN's surroundings for issue 14's cases (faults/vpnvariants.go).

// ReturnRoutesByBGP makes the return routes to the VPN pool look learnt by BGP (protocol
// bird, as Calico's BGP daemon installs them) until cleanup.
func (l *Lab) ReturnRoutesByBGP(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "return routes by BGP", l.faults.AddReturnRoutesByBGP(ctx))
	cleanup(tb, "ReturnRoutesByBGP", func(ctx context.Context) error { return l.faults.AddReturnRoutes(ctx, nil) })
}

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
