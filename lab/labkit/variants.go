package labkit

import (
	"context"
	"testing"
)

// LanDNSVariant puts the zone DNS (traefik/lan-dns) in one of its real-world shapes until
// cleanup, when the seed's manifest is applied again: "dot-block" (zone-scoped templates in the
// `.` block), "import" (k3s's coredns-custom ConfigMap imported as *.server), "import-twice"
// (import, plus the same zone block in the Corefile: CoreDNS refuses it; running pods keep
// their last good configuration).
func (l *Lab) LanDNSVariant(tb testing.TB, name string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	// Registered first: a variant that failed half-way is undone too.
	cleanup(tb, "LanDNSVariant", func(ctx context.Context) error { return l.faults.ApplyLanDNSVariant(ctx, "seed") })
	must(tb, "lan-dns variant "+name, l.faults.ApplyLanDNSVariant(ctx, name))
}

// ContainerLog returns the log of a container the lab runs for a pod (an error until the
// container first started).
func (l *Lab) ContainerLog(namespace, pod, container string) (string, error) {
	ctx, cancel := opCtx()
	defer cancel()
	return l.faults.ContainerLog(ctx, namespace, pod, container)
}
