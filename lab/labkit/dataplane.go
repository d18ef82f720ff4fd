package labkit

import (
	"context"
	"fmt"
	"testing"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
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

// SecondNIC gives a node a second LAN interface (lan1) carrying cidr, which its
// status.addresses do not list; cleanup unplugs it.
func (l *Lab) SecondNIC(tb testing.TB, node, cidr string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "second NIC on "+node, l.faults.AddSecondNIC(ctx, node, cidr))
	cleanup(tb, "SecondNIC", func(ctx context.Context) error { return l.faults.RemoveSecondNIC(ctx, node) })
}

// SetExternalIPs writes a Service's externalIPs until cleanup.
func (l *Lab) SetExternalIPs(tb testing.TB, namespace, name string, ips ...string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.SetExternalIPs(ctx, namespace, name, ips)
	must(tb, "set the externalIPs of "+namespace+"/"+name, err)
	cleanup(tb, "SetExternalIPs", func(ctx context.Context) error {
		_, err := l.faults.SetExternalIPs(ctx, namespace, name, prev)
		return err
	})
}

// KubeProxyMode restarts every node's kube-proxy in mode (kubeproxy.IPTables or NFTables) and
// makes kube-proxy's ConfigMap say it; cleanup restores the previous mode.
func (l *Lab) KubeProxyMode(tb testing.TB, mode kubeproxy.Mode) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	prev, err := l.faults.SetKubeProxyMode(ctx, mode)
	must(tb, "kube-proxy mode "+string(mode), err)
	cleanup(tb, "KubeProxyMode", func(ctx context.Context) error {
		_, err := l.faults.SetKubeProxyMode(ctx, prev)
		return err
	})
}

// KubeProxyFeatureGate restarts every node's real kube-proxy with the feature gate name set to
// on (its KubeProxyConfiguration's featureGates) and makes kube-proxy's ConfigMap say it;
// cleanup restarts them without featureGates.
func (l *Lab) KubeProxyFeatureGate(tb testing.TB, name string, on bool) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	cleanup(tb, "KubeProxyFeatureGate", func(ctx context.Context) error { return l.faults.SetKubeProxyGate(ctx, name, nil) })
	must(tb, fmt.Sprintf("kube-proxy %s=%t", name, on), l.faults.SetKubeProxyGate(ctx, name, &on))
}
