package labctl

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// A node whose pods have network namespaces of their own serves its kubelet port through the
// lab's kubelet shim (package kubeletshim): kwok's exec runs commands in kwok's own namespace,
// the node's, where such a pod's processes are not. The shim answers exec in the pod's
// namespaces and passes the rest to kwok, which then listens on the node's loopback.

// kwokBehindShimPort is kwok's port on the loopback of a node with a shim.
const kwokBehindShimPort = 10251

// HasKubeletShim reports whether the node's kubelet port is the shim's.
func HasKubeletShim(n layout.Node) bool { return podruntime.OwnNamespace(n, nil) }

// ProcKubeletShim is a node's shim process.
func ProcKubeletShim(node string) string { return "kubelet-shim-" + node }

// kubeletShimMatch is what the shim's command line contains.
func kubeletShimMatch(l layout.Layout, node string) string {
	return l.LabBinary() + " kubelet-shim --state-dir " + l.StateDir + " --node " + node
}

// kwokServing is how kwok serves the kubelet API: on the node's address with the node's
// serving certificate, or in plain HTTP on the loopback behind the shim.
func kwokServing(l layout.Layout, n layout.Node) []string {
	if HasKubeletShim(n) {
		return []string{"--server-address=127.0.0.1:" + strconv.Itoa(kwokBehindShimPort)}
	}
	dir := l.Path("pki")
	return []string{
		"--server-address=" + fmt.Sprintf("%s:%d", n.LANIP, l.KubeletPort),
		"--tls-cert-file=" + pki.File(dir, pki.KwokServing(n.NS), "crt"),
		"--tls-private-key-file=" + pki.File(dir, pki.KwokServing(n.NS), "key"),
	}
}

// kubeletShimSpec runs the shim in the node's namespace, from the lab binary's copy.
func kubeletShimSpec(l layout.Layout, n layout.Node) procs.Spec {
	dir := l.Path("pki")
	return procs.Spec{Name: ProcKubeletShim(n.NS), NS: n.NS, Dir: l.StateDir, Argv: []string{
		l.LabBinary(), "kubelet-shim", "--state-dir", l.StateDir, "--node", n.NS,
		"--listen", fmt.Sprintf("%s:%d", n.LANIP, l.KubeletPort),
		"--upstream", "http://127.0.0.1:" + strconv.Itoa(kwokBehindShimPort),
		"--tls-cert-file", pki.File(dir, pki.KwokServing(n.NS), "crt"),
		"--tls-private-key-file", pki.File(dir, pki.KwokServing(n.NS), "key"),
		"--client-ca-file", pki.File(dir, pki.CA, "crt"),
		"--kubeconfig", kubeconfigPath(l, pki.KwokClient(n.NS)),
	}}
}

// restartKubeletShims restarts the shims on a new lab binary (they run from its copy).
func restartKubeletShims(ctx context.Context, l layout.Layout, mgr procs.Manager) error {
	for _, n := range l.Nodes {
		if !HasKubeletShim(n) {
			continue
		}
		if err := mgr.Stop(ctx, ProcKubeletShim(n.NS), kubeletShimMatch(l, n.NS)); err != nil {
			return err
		}
		if _, _, err := mgr.Start(kubeletShimSpec(l, n)); err != nil {
			return err
		}
	}
	return nil
}
