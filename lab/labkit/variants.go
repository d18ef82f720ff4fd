package labkit

import (
	"context"
	"testing"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
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

// DualStack puts the lab in a dual-stack mode until cleanup: "on" (IPv6 on the LAN, the seed
// nodes' IPv6 InternalIPs, both Services' externalIPs carrying them, the zone answering AAAA
// with them) or "no-aaaa" (the same, the zone answering AAAA with NODATA). The cluster stays
// single-stack IPv4 (see faults.SetDualStack).
func (l *Lab) DualStack(tb testing.TB, mode string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	cleanup(tb, "DualStack", func(ctx context.Context) error { return l.faults.SetDualStack(ctx, "off") })
	must(tb, "dual stack "+mode, l.faults.SetDualStack(ctx, mode))
}

// LANIPv6 is a lab host's IPv6 LAN address in the dual-stack modes, given its IPv4 one.
func LANIPv6(ipv4 string) string { return faults.LANIPv6(ipv4) }

// WithoutAAAATemplate removes the zone's `template IN AAAA` blocks from a Corefile.
func WithoutAAAATemplate(corefile string) string { return faults.WithoutAAAATemplate(corefile) }
