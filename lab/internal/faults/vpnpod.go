package faults

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// The VPN pod runs on the dedicated node in a network namespace of its own: what `kubectl exec`
// into it changes (a hand fix), its masquerade and its process live there, not in the node's.

// VPNPod is the running pod of the dedicated node whose network namespace exists.
func (f Lab) VPNPod(ctx context.Context) (*corev1.Pod, error) {
	vpn, err := labctl.VPNNode(f.Layout)
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	err = poll(ctx, 30*time.Second, func() error {
		list, err := f.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", vpn.NS).String(),
		})
		if err != nil {
			return err
		}
		var found []*corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			if podruntime.Scheduled(p) {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			return fmt.Errorf("%d running pods with their own namespace on %s, want the VPN pod alone", len(found), vpn.NS)
		}
		ok, err := netns.Exists(ctx, podruntime.PodNetNS(found[0].UID))
		if err != nil || !ok {
			return errors.Join(err, fmt.Errorf("pod %s/%s has no network namespace yet", found[0].Namespace, found[0].Name))
		}
		pod = found[0]
		return nil
	})
	return pod, err
}

// VPNPodNS is the VPN pod's network namespace.
func (f Lab) VPNPodNS(ctx context.Context) (string, error) {
	p, err := f.VPNPod(ctx)
	if err != nil {
		return "", err
	}
	return podruntime.PodNetNS(p.UID), nil
}

// VPNPodIPForward reads net.ipv4.ip_forward in the VPN pod's namespace.
func (f Lab) VPNPodIPForward(ctx context.Context) (bool, error) {
	ns, err := f.VPNPodNS(ctx)
	if err != nil {
		return false, err
	}
	v, err := netns.ReadSysctl(ctx, ns, "net.ipv4.ip_forward")
	return v == "1", err
}

// SetVPNPodIPForward writes net.ipv4.ip_forward in the VPN pod's namespace, what `kubectl exec
// ... sysctl -w` does by hand, and returns the old value.
func (f Lab) SetVPNPodIPForward(ctx context.Context, on bool) (bool, error) {
	ns, err := f.VPNPodNS(ctx)
	if err != nil {
		return false, err
	}
	prev, err := netns.ReadSysctl(ctx, ns, "net.ipv4.ip_forward")
	if err != nil {
		return false, err
	}
	v := "0"
	if on {
		v = "1"
	}
	return prev == "1", netns.Sysctl(ctx, ns, "net.ipv4.ip_forward", v)
}

// KillVPNContainer kills the VPN pod's OpenVPN process and waits until the runtime has started
// it again, as the kubelet restarts a container that died: the same pod, the same namespace.
func (f Lab) KillVPNContainer(ctx context.Context, container string) error {
	p, err := f.VPNPod(ctx)
	if err != nil {
		return err
	}
	mgr := procs.Manager{PidDir: podruntime.PodDir(f.Layout, p), LogDir: podruntime.PodDir(f.Layout, p)}
	const match = "openvpn"
	pid, ok := mgr.Pid(container, match)
	if !ok {
		return fmt.Errorf("container %s of pod %s/%s runs no process", container, p.Namespace, p.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	return poll(ctx, 30*time.Second, func() error {
		if cur, ok := mgr.Pid(container, match); !ok || cur == pid {
			return fmt.Errorf("container %s of pod %s/%s not started again yet", container, p.Namespace, p.Name)
		}
		return nil
	})
}
