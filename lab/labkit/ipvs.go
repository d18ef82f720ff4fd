package labkit

import (
	"context"
	"testing"
)

// IPVSMode makes every node bind its peers' externalIPs on kube-ipvs0 and kube-proxy's
// ConfigMap say mode: ipvs, as kube-proxy's IPVS proxier does (faults.SetIPVSMode); cleanup
// puts iptables mode back.
func (l *Lab) IPVSMode(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "IPVS mode", l.faults.SetIPVSMode(ctx, true))
	cleanup(tb, "IPVSMode", func(ctx context.Context) error { return l.faults.SetIPVSMode(ctx, false) })
}
