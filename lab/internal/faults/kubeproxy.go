package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
)

// SetKubeProxyMode restarts every node's kube-proxy in mode (iptables or nftables; the new
// process removes the other mode's rules as it starts) and makes kube-proxy's ConfigMap say
// that mode, so that doctor reads what runs. It waits until each kube-proxy has synced once,
// and returns the mode node-1's ran before.
func (f Lab) SetKubeProxyMode(ctx context.Context, mode kubeproxy.Mode) (kubeproxy.Mode, error) {
	prev, err := kubeproxy.ReadMode(f.Layout, f.Layout.Nodes[0].NS)
	if err != nil {
		return "", err
	}
	if err := f.setKubeProxyMode(ctx, string(mode)); err != nil {
		return prev, err
	}
	since := time.Now()
	for _, n := range f.Layout.Nodes {
		if err := labctl.RestartKubeProxy(ctx, f.Layout, n.NS, mode); err != nil {
			return prev, err
		}
	}
	if err := f.waitKubeProxies(ctx, since); err != nil {
		return prev, fmt.Errorf("%s mode: %w", mode, err)
	}
	return prev, nil
}

// SetKubeProxyGate restarts every node's kube-proxy (in the mode it runs) with the feature
// gate name set to on, or with no featureGates when on is nil, and makes kube-proxy's
// ConfigMap say the same, so that doctor reads what runs. It waits until each has synced.
func (f Lab) SetKubeProxyGate(ctx context.Context, name string, on *bool) error {
	mode, err := kubeproxy.ReadMode(f.Layout, f.Layout.Nodes[0].NS)
	if err != nil {
		return err
	}
	var gates map[string]bool
	if on != nil {
		gates = map[string]bool{name: *on}
	}
	if err := f.setKubeProxyGates(ctx, gates); err != nil {
		return err
	}
	since := time.Now()
	for _, n := range f.Layout.Nodes {
		if err := labctl.RestartKubeProxyGates(ctx, f.Layout, n.NS, mode, gates); err != nil {
			return err
		}
	}
	return f.waitKubeProxies(ctx, since)
}
