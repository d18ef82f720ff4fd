package labkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// The VPN pod has a network namespace of its own on node-vpn: its ip_forward, its masquerade
// and its process are there. Where a new pod's ip_forward comes from is the nodes' CNI
// configuration (Calico's without allow_ip_forwarding, unless a test installs another).

// PodNetNS is the network namespace of a pod on a dedicated node (Exec runs commands there).
func (l *Lab) PodNetNS(uid types.UID) string { return podruntime.PodNetNS(uid) }

// VPNPod is the running VPN pod (its network namespace exists).
func (l *Lab) VPNPod(tb testing.TB) *corev1.Pod {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	p, err := l.faults.VPNPod(ctx)
	must(tb, "find the VPN pod", err)
	return p
}

// VPNPodIPForward reads net.ipv4.ip_forward in the VPN pod's network namespace.
func (l *Lab) VPNPodIPForward(tb testing.TB) bool {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	on, err := l.faults.VPNPodIPForward(ctx)
	must(tb, "read the VPN pod's ip_forward", err)
	return on
}

// SetVPNPodIPForward writes net.ipv4.ip_forward in the VPN pod's namespace, like a hand fix
// with kubectl exec; the old value comes back at cleanup if the pod is still the same.
func (l *Lab) SetVPNPodIPForward(tb testing.TB, on bool) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	before := l.VPNPod(tb).UID
	prev, err := l.faults.SetVPNPodIPForward(ctx, on)
	must(tb, "set the VPN pod's ip_forward", err)
	cleanup(tb, "SetVPNPodIPForward", func(ctx context.Context) error {
		p, err := l.faults.VPNPod(ctx)
		if err != nil || p.UID != before {
			return err // a new pod has its own value: nothing to undo
		}
		_, err = l.faults.SetVPNPodIPForward(ctx, prev)
		return err
	})
}

// KillVPNContainer kills the VPN pod's OpenVPN process and waits until it runs again: a
// container restart, in the same pod and network namespace.
func (l *Lab) KillVPNContainer(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "restart the VPN container", l.faults.KillVPNContainer(ctx, "openvpn"))
}

// InstallCNI installs a CNI's DaemonSet and configuration (lab/manifests/cni/<name>.yaml:
// "calico", "flannel") until cleanup: the nodes' CNI directories hold what its install step
// writes, and its hostNetwork pods read the nodes. At cleanup the CNI is removed, the nodes get
// the lab's Calico configuration back, and a VPN pod started meanwhile is replaced by one that
// starts from it.
func (l *Lab) InstallCNI(tb testing.TB, name string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	before := l.VPNPod(tb).UID
	err := l.faults.InstallCNI(ctx, l.Config, l.LabDir, name)
	cleanup(tb, "InstallCNI", func(ctx context.Context) error {
		if err := l.faults.UninstallCNI(ctx, l.LabDir, name); err != nil {
			return err
		}
		p, err := l.faults.VPNPod(ctx)
		if err != nil || p.UID == before {
			return err
		}
		return l.faults.DeletePods(ctx, "vpn", "app=openvpn", "openvpn")
	})
	must(tb, "install CNI "+name, err)
}

// ApplyRemedy runs a remediation that vpn-trace printed, as an operator pastes it into a shell:
// kubectl is the lab's, against the lab.
func (l *Lab) ApplyRemedy(tb testing.TB, script string) string {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.Kubeconfig, "PATH="+filepath.Dir(l.KubectlBin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("the remedy failed: %v\n%s\nscript:\n%s", err, out, script)
	}
	return string(out)
}

// WaitDaemonSet waits until a DaemonSet's pods are all updated and ready.
func (l *Lab) WaitDaemonSet(tb testing.TB, namespace, name string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "wait for daemonset "+namespace+"/"+name, l.faults.WaitDaemonSet(ctx, namespace, name))
}

// WaitRollout waits until a Deployment's pods are all updated and available, and the lab's
// runtime and kube-proxy have acted on them.
func (l *Lab) WaitRollout(tb testing.TB, namespace, name string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "wait for deployment "+namespace+"/"+name, l.faults.WaitRollout(ctx, namespace, name))
}

// NodeCNIConflist writes a configuration made of the real plugins only (ptp with host-local on
// the node's pod CIDR, portmap, tuning with sysctl) as file name in the node's CNI directory
// (its /etc/cni/net.d), until cleanup. A name that sorts first is the one new pods get.
func (l *Lab) NodeCNIConflist(tb testing.TB, node, name string, sysctl map[string]string) {
	tb.Helper()
	n, err := l.layout.Node(node)
	must(tb, "find node "+node, err)
	conf, err := podruntime.LabConflist("lab", n.PodCIDR, l.layout.Path("nodes", node, "cni", "networks"), sysctl)
	must(tb, "render the conflist", err)
	path := filepath.Join(l.layout.NodeCNIDir(node), name)
	must(tb, "write "+path, os.WriteFile(path, conf, 0o644)) //nolint:gosec // a node's CNI configuration is world-readable
	cleanup(tb, "NodeCNIConflist", func(context.Context) error { return os.Remove(path) })
}

// VPNPodSandbox is what the runtime recorded of the VPN pod's sandbox: the node's CNI
// configuration file that set it up and the plugins of it the lab played instead of running.
func (l *Lab) VPNPodSandbox(tb testing.TB) (cniConfig string, standIns []string) {
	tb.Helper()
	p := l.VPNPod(tb)
	sb, err := podruntime.ReadSandbox(podruntime.PodDir(l.layout, p))
	must(tb, "read the VPN pod's sandbox record", err)
	return sb.CNIConfig, sb.StandIns
}

// ReturnRouteWithoutOnlink makes node-vpn's route on to the VPN pod's pool the one an operator
// types, `ip route replace <pool> via <pod IP> dev <veth>`, without onlink (ptp routes the pod IP
// with scope host, so the kernel does not use it as a gateway), until cleanup.
func (l *Lab) ReturnRouteWithoutOnlink(tb testing.TB) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	p := l.VPNPod(tb)
	sb, err := podruntime.ReadSandbox(podruntime.PodDir(l.layout, p))
	must(tb, "read the VPN pod's sandbox record", err)
	node := l.VPNNode().Name
	route := func(ctx context.Context, extra ...string) error {
		_, err := netns.Run(ctx, node, append([]string{"ip", "route", "replace", l.layout.VPNPool, "via", p.Status.PodIP, "dev", sb.HostVeth}, extra...)...)
		return err
	}
	must(tb, "route the pool without onlink", route(ctx))
	cleanup(tb, "ReturnRouteWithoutOnlink", func(ctx context.Context) error { return route(ctx, "onlink") })
}
