package vpn

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloadRef is what owns a VPN pod: the object whose pod template the fix goes into.
type workloadRef struct {
	Kind      string // Deployment, StatefulSet, DaemonSet, ReplicaSet; "" for a bare pod
	Name      string
	Namespace string
}

func (w workloadRef) String() string {
	if w.Kind == "" {
		return "Pod " + w.Namespace + "/" + w.Name
	}
	return w.Kind + " " + w.Namespace + "/" + w.Name
}

// podOwner follows pod -> ReplicaSet -> Deployment, once per pod. Without permission to
// read the ReplicaSet it stops there: a patch to the ReplicaSet is still better than nothing.
func (t *vpnTrace) podOwner(ctx context.Context, p *vpnPod) workloadRef {
	w, _ := p.owner.get(ctx, func(ctx context.Context) (workloadRef, error) { return t.findOwner(ctx, p), nil })
	return w
}

func (t *vpnTrace) findOwner(ctx context.Context, p *vpnPod) workloadRef {
	w := workloadRef{Name: p.Ref.Name, Namespace: p.Ref.Namespace}
	ref := metav1.GetControllerOf(p.Pod)
	if ref == nil {
		return w
	}
	w.Kind, w.Name = ref.Kind, ref.Name
	if ref.Kind != "ReplicaSet" {
		return w
	}
	rs, err := t.env.Client.AppsV1().ReplicaSets(p.Ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return w
	}
	if d := metav1.GetControllerOf(rs); d != nil && d.Kind == "Deployment" {
		w.Kind, w.Name = d.Kind, d.Name
	}
	return w
}

// Fix variants for a durable ip_forward=1.
const (
	variantInitContainer = "initContainer"
	variantSysctls       = "securityContext.sysctls"
)

// forwardingFixYAML is the change that makes ip_forward=1 part of the manifest, as a patch of
// the owner's pod template (or, for a bare pod, the pod spec to recreate it with).
func forwardingFixYAML(w workloadRef, variant string) string {
	var body string
	if variant == variantSysctls {
		body = `securityContext:
  sysctls:
  - name: net.ipv4.ip_forward
    value: "1"`
	} else {
		body = `initContainers:
- name: enable-ip-forward
  image: busybox:1.36.1
  command: ["sysctl", "-w", "net.ipv4.ip_forward=1"]
  securityContext:
    privileged: true`
	}
	return templatePatch(w, "enable-ip-forward.yaml", body)
}

// masqueradeFixYAML adds the pool's masquerade at pod start: nat rules belong to the pod's
// network namespace, so an init container with NET_ADMIN can write them for the VPN
// container. It reuses the VPN image, which carries iptables.
func masqueradeFixYAML(w workloadRef, image string, pool netip.Prefix, outIface string) string {
	if outIface == "" {
		outIface = "eth0"
	}
	body := fmt.Sprintf(`initContainers:
- name: masquerade-vpn-clients
  image: %s
  command: ["iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "%s", "-o", "%s", "-j", "MASQUERADE"]
  securityContext:
    capabilities:
      add: ["NET_ADMIN"]`, image, pool, outIface)
	return templatePatch(w, "masquerade-vpn-clients.yaml", body)
}

// templatePatch wraps a pod-spec fragment into a strategic-merge patch for the owner and the
// command that applies it.
func templatePatch(w workloadRef, file, podSpec string) string {
	if w.Kind == "" {
		return fmt.Sprintf("# %s has no controller: recreate it with these fields in its spec\nspec:\n%s", w, indent(podSpec, "  "))
	}
	return fmt.Sprintf("# %s: kubectl -n %s patch %s %s --patch-file %s\nspec:\n  template:\n    spec:\n%s",
		file, w.Namespace, strings.ToLower(w.Kind), w.Name, file, indent(podSpec, "      "))
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
