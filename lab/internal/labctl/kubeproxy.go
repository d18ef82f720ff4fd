package labctl

import (
	"context"
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// KubeProxyKubeconfig is the kubeconfig every node's kube-proxy uses: the system:kube-proxy
// identity, as kubeadm's kube-proxy DaemonSet shares one ServiceAccount across nodes.
func KubeProxyKubeconfig(l layout.Layout) string { return kubeconfigPath(l, pki.KubeProxy) }

// kubeProxySteps write each node's kube-proxy configuration (mode iptables, kube-proxy's own
// default) and start one kube-proxy per node namespace.
func (b *bringUp) kubeProxySteps() []step {
	steps := make([]step, 0, len(b.l.Nodes))
	for _, n := range b.l.Nodes {
		steps = append(steps, b.startLater(kubeproxy.ProcName(n.NS), func() (procs.Spec, error) {
			if err := kubeproxy.WriteConfig(b.l, n.NS, kubeproxy.Default, KubeProxyKubeconfig(b.l)); err != nil {
				return procs.Spec{}, err
			}
			return kubeproxy.Spec(b.l, b.st.Binaries.KubeProxyBin(), n.NS), nil
		}))
	}
	return steps
}

// RestartKubeProxy rewrites a node's kube-proxy configuration with another mode and restarts
// the process; the new kube-proxy removes the other mode's rules itself when it starts
// (cmd/kube-proxy/app/server_linux.go platformCleanup).
func RestartKubeProxy(ctx context.Context, l layout.Layout, node string, mode kubeproxy.Mode) error {
	return RestartKubeProxyGates(ctx, l, node, mode, nil)
}

// RestartKubeProxyGates is RestartKubeProxy with kube-proxy's featureGates set to gates.
func RestartKubeProxyGates(ctx context.Context, l layout.Layout, node string, mode kubeproxy.Mode, gates map[string]bool) error {
	st, err := LoadState(l)
	if err != nil {
		return err
	}
	mgr := Procs(l)
	if err := mgr.Stop(ctx, kubeproxy.ProcName(node), kubeproxy.Match(l, node)); err != nil {
		return err
	}
	if err := kubeproxy.WriteConfigGates(l, node, mode, KubeProxyKubeconfig(l), gates); err != nil {
		return err
	}
	if _, _, err := mgr.Start(kubeproxy.Spec(l, st.Binaries.KubeProxyBin(), node)); err != nil {
		return fmt.Errorf("restart kube-proxy on %s: %w", node, err)
	}
	return nil
}
