package vpn

import (
	"net/netip"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Fix variants for a durable ip_forward=1 (their fragments are facts', which --prove-fixes
// dry-runs).
const (
	variantInitContainer = facts.VariantInitContainer
	variantSysctls       = facts.VariantSysctls
)

// forwardingFix is the manifest change for the owner, with the chart's switch named when a
// chart installed it.
func forwardingFix(d durability) string {
	fix := forwardingFixYAML(d.Owner, d.Variant)
	if d.Chart != "" && d.ChartSwitch == "" {
		fix = remedy.Commentf("# installed by the chart %s: if it has a forwarding switch (stable/openvpn: ipForwardInitContainer: true), set it in your values instead of patching\n", d.Chart) + fix
	}
	return fix
}

// forwardingFixYAML is the change that makes ip_forward=1 part of the manifest, as a patch of
// the owner's pod template (or, for a bare pod, the pod spec to recreate it with).
func forwardingFixYAML(w facts.Workload, variant string) string {
	spec := map[string]any{}
	if variant == variantSysctls {
		spec["securityContext"] = corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{facts.ForwardSysctl()}}
	} else {
		spec["initContainers"] = []corev1.Container{facts.ForwardInitContainer()}
	}
	return templatePatch(w, "enable-ip-forward.yaml", spec)
}

// masqueradeFixYAML adds the pool's masquerade at pod start: nat rules belong to the pod's
// network namespace, so an init container with NET_ADMIN can write them for the VPN
// container. It reuses the VPN image, which carries iptables.
func masqueradeFixYAML(w facts.Workload, image string, pool netip.Prefix, outIface string) string {
	if outIface == "" {
		outIface = "eth0"
	}
	spec := map[string]any{"initContainers": []corev1.Container{{
		Name:    "masquerade-vpn-clients",
		Image:   image,
		Command: []string{"iptables", "-t", "nat", "-A", "POSTROUTING", "-s", pool.String(), "-o", outIface, "-j", "MASQUERADE"},
		SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
			Add: []corev1.Capability{"NET_ADMIN"},
		}},
	}}}
	return templatePatch(w, "masquerade-vpn-clients.yaml", spec)
}

// templatePatch wraps a pod-spec fragment into a strategic-merge patch of the owner's pod
// template, headed by the command that applies it (for a bare pod: the spec to recreate it
// with).
func templatePatch(w facts.Workload, file string, podSpec map[string]any) string {
	if w.Kind == "" {
		return remedy.Commentf("# %s has no controller: recreate it with these fields in its spec\n", w.String()) +
			remedy.YAML(map[string]any{"spec": podSpec})
	}
	apply := remedy.Kubectl(w.Namespace, "patch", strings.ToLower(w.Kind), w.Name, "--patch-file", file)
	return remedy.Commentf("# %s: %s\n", file, apply) +
		remedy.YAML(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": podSpec}}})
}

// openVPNToken is a word OpenVPN's configuration parser reads literally inside a quoted push
// argument: no quote, backslash, whitespace, comment or control character.
var openVPNToken = regexp.MustCompile(`^[A-Za-z0-9._:/-]+$`)

// openVPNPush is a server configuration line `push "WORDS"`.
func openVPNPush(words ...string) string { return `push "` + openVPNDirective(words...) + `"` }

// openVPNDirective is a configuration line of words. The words come from the cluster
// (addresses, the search domain): one that is not a plain token is replaced by a placeholder
// instead of being escaped into a line OpenVPN would read differently.
func openVPNDirective(words ...string) string {
	safe := make([]string, len(words))
	for i, w := range words {
		if !openVPNToken.MatchString(w) {
			w = "<VALUE>"
		}
		safe[i] = w
	}
	return strings.Join(safe, " ")
}

// serverLogs shows the OpenVPN container's last lines.
func serverLogs(p *facts.Pod) string {
	return remedy.Kubectl(p.Ref.Namespace, "logs", p.Ref.Name, "-c", p.Container, "--tail=50")
}
