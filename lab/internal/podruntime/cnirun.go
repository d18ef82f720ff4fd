package podruntime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// podIfName is the pod's interface, as the kubelet names it for the runtime.
const podIfName = "eth0"

// loopbackNetwork is the network containerd and CRI-O add to every sandbox for lo.
const loopbackNetwork = `{"cniVersion": "1.0.0", "name": "cni-loopback", "plugins": [{"type": "loopback"}]}`

// podRef is what a CNI call needs of a pod (teardown has only the pod's directory).
type podRef struct {
	UID, Namespace, Name string
}

// cni is libcni for a node: the lab's plugins, run in the node's namespace, its cache (where
// libcni keeps each attachment's configuration and result) under the node's state.
func (r *Runtime) cni(node layout.Node) *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir([]string{r.Bins.CNIPlugins}, r.Layout.Path("nodes", node.NS, "cni", "cache"), nodeExec{NS: node.NS})
}

// wiring is the lab's pod wiring on a node (cni.go).
func (r *Runtime) wiring(node layout.Node) podWiring {
	return podWiring{Subnet: node.PodCIDR, DataDir: r.Layout.Path("nodes", node.NS, "cni", "networks")}
}

// runtimeConf is what the runtime passes for a pod: the CRI's K8S_* arguments (as containerd
// does) and its capabilities (the pod IP the lab's API assigned, hostPorts as portMappings).
func runtimeConf(ref podRef, netNS string, caps map[string]any) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: ref.UID,
		NetNS:       "/run/netns/" + netNS,
		IfName:      podIfName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", ref.Namespace}, {"K8S_POD_NAME", ref.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", ref.UID}, {"K8S_POD_UID", ref.UID},
		},
		CapabilityArgs: caps,
	}
}

// podCapabilities are the capability arguments of a pod: "ips" (its status.podIP, which
// host-local then hands out) and "portMappings" (its containers' hostPorts).
func podCapabilities(p *corev1.Pod) map[string]any {
	caps := map[string]any{"ips": []string{p.Status.PodIP}}
	var maps []map[string]any
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			proto := strings.ToLower(string(port.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			maps = append(maps, map[string]any{"hostPort": port.HostPort, "containerPort": port.ContainerPort, "protocol": proto})
		}
	}
	if len(maps) > 0 {
		caps["portMappings"] = maps
	}
	return caps
}

// cniAdd runs ADD of the loopback network and of the node's network for the pod; on failure it
// releases what was set up (DEL), as a runtime does before it retries.
func (r *Runtime) cniAdd(ctx context.Context, sb *Sandbox, node layout.Node, p *corev1.Pod) error {
	nw, err := loadNodeNetwork(r.Layout.NodeCNIDir(node.NS), r.wiring(node))
	if err != nil {
		return err
	}
	ref := podRef{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name}
	sb.CNIConfig, sb.StandIns, sb.Network = nw.File, nw.StandIns, nw.List.Bytes
	c := r.cni(node)
	lo, err := libcni.NetworkConfFromBytes([]byte(loopbackNetwork))
	if err != nil {
		return err
	}
	rtLo := runtimeConf(ref, sb.NetNS, nil)
	rtLo.IfName = "lo"
	if _, err := c.AddNetworkList(ctx, lo, rtLo); err != nil {
		return fmt.Errorf("CNI ADD (loopback): %w", err)
	}
	res, err := c.AddNetworkList(ctx, nw.List, runtimeConf(ref, sb.NetNS, podCapabilities(p)))
	if err == nil {
		sb.HostVeth, err = checkResult(res, p.Status.PodIP)
	}
	if err != nil {
		r.cniRelease(ctx, node, ref, sb.NetNS)
		return fmt.Errorf("CNI ADD (%s): %w", nw.File, err)
	}
	return nil
}

// checkResult returns the node's end of the pod's interface (the result's interface without a
// sandbox) once the pod's interface has the pod's IP.
func checkResult(res types.Result, podIP string) (string, error) {
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return "", err
	}
	hostVeth := ""
	for _, i := range r.Interfaces {
		if i.Sandbox == "" && hostVeth == "" {
			hostVeth = i.Name
		}
	}
	want := net.ParseIP(podIP)
	for _, ipc := range r.IPs {
		if ipc.Address.IP.Equal(want) {
			if hostVeth == "" {
				return "", errors.New("the result names no interface on the node")
			}
			return hostVeth, nil
		}
	}
	return "", fmt.Errorf("the result's addresses %v do not include the pod IP %s", r.IPs, podIP)
}

// cniDel runs DEL of the network a pod was set up with (as recorded) and of the loopback
// network, with the capability arguments libcni cached at ADD.
func (r *Runtime) cniDel(ctx context.Context, node layout.Node, ref podRef, sb Sandbox) error {
	c := r.cni(node)
	var errs []error
	if len(sb.Network) > 0 {
		list, err := libcni.NetworkConfFromBytes(sb.Network)
		if err != nil {
			return err
		}
		rt := runtimeConf(ref, sb.NetNS, nil)
		if _, cached, err := c.GetNetworkListCachedConfig(list, rt); err == nil && cached != nil {
			rt.CapabilityArgs = cached.CapabilityArgs
		}
		if err := c.DelNetworkList(ctx, list, rt); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL (%s): %w", sb.CNIConfig, err))
		}
	}
	if lo, err := libcni.NetworkConfFromBytes([]byte(loopbackNetwork)); err == nil {
		rtLo := runtimeConf(ref, sb.NetNS, nil)
		rtLo.IfName = "lo"
		if err := c.DelNetworkList(ctx, lo, rtLo); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL (loopback): %w", err))
		}
	}
	return errors.Join(errs...)
}

// cniRelease runs DEL of the node's current network for a set-up that failed half-way (its
// host-local lease would hold the pod's IP); what fails is only logged.
func (r *Runtime) cniRelease(ctx context.Context, node layout.Node, ref podRef, netNS string) {
	nw, err := loadNodeNetwork(r.Layout.NodeCNIDir(node.NS), r.wiring(node))
	if err != nil {
		return
	}
	if err := r.cniDel(ctx, node, ref, Sandbox{NetNS: netNS, CNIConfig: nw.File, Network: nw.List.Bytes}); err != nil {
		r.Log.Printf("pod %s/%s: releasing a half-made sandbox: %v", ref.Namespace, ref.Name, err)
	}
}
