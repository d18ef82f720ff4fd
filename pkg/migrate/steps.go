package migrate

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// ValuesFile is the file name the Helm steps write the values to.
const ValuesFile = "lanaccess-hostport-values.yaml"

// whoWins is what happens on a node while an old Service's externalIP and a new pod's hostPort
// claim the same address and port. kube-proxy (iptables mode) prepends its KUBE-SERVICES jump
// to nat PREROUTING (kubernetes v1.37.2 pkg/proxy/iptables/proxier.go, iptablesJumpChains,
// EnsureRule(utiliptables.Prepend)); the portmap plugin appends its CNI-HOSTPORT-DNAT jump
// (containernetworking/plugins v1.10.0 plugins/meta/portmap/portmap_iptables.go,
// genToplevelDnatChain: prependEntry unset, utils.InsertUnique appends). The externalIP rule is
// therefore matched first, whichever started first. The lab measured it with both on node-vpn,
// with kube-proxy in iptables and in nftables mode: the externalIP's Service answered, and
// portmap's pod once the externalIP was removed (lab/e2e
// TestAnExternalIPWinsOverAHostPortUntilItIsRemoved).
const whoWins = "While the old Services keep their externalIPs, the node addresses' ports still reach the old Services: " +
	"kube-proxy's rules match the externalIP first (iptables mode: its KUBE-SERVICES jump is prepended to nat PREROUTING, " +
	"portmap's CNI-HOSTPORT-DNAT jump appended; nftables mode measured the same). The new pods take the LAN traffic when the externalIPs go."

// hostPortSteps is the cut-over: the new objects beside the old ones, doctor on them, the
// externalIPs removed, doctor again, and the old objects deleted.
func hostPortSteps(p *Plan, proxy, dns *part) []Step {
	var steps []Step
	proxyRef, dsNames := serviceRef(proxy), []*appsv1.DaemonSet{dns.daemonSet}
	if p.Values != nil {
		steps = append(steps, helmStep(p.Values, proxy))
		proxyRef = proxy.oldService.Namespace + "/" + proxy.oldService.Name
	} else {
		dsNames = append([]*appsv1.DaemonSet{proxy.daemonSet}, dsNames...)
	}
	refs := make([]string, 0, len(p.Objects))
	for _, o := range p.Objects {
		refs = append(refs, refOf(o))
	}
	steps = append(steps, Step{
		Title: "Apply the new objects beside the old ones",
		Why: []string{
			"New names (" + strings.Join(refs, ", ") + "): nothing old is changed. Each new pod takes its node's ports " +
				portList(proxy, dns) + " as hostPorts; its Service has no externalIPs and selects only the new pods (label " + MigratedLabel + "=" + string(HostPort) + ").",
			whoWins,
		},
		Commands: []string{remedy.Apply(p.Manifest())},
	})
	var wait []string
	if p.Values != nil {
		wait = append(wait, remedy.Kubectl(proxy.oldWorkload.Namespace, "rollout", "status", "daemonset/"+proxy.oldWorkload.Name, "--timeout=5m"))
	}
	for _, ds := range dsNames {
		wait = append(wait, remedy.Kubectl(ds.Namespace, "rollout", "status", "daemonset/"+ds.Name, "--timeout=5m"))
	}
	steps = append(steps, Step{
		Title:    "Wait for a new pod on every node that carries an address",
		Why:      []string{"A pod that stays Pending names the port its node already has taken (the scheduler's NodePorts filter) or the taint it does not tolerate."},
		Commands: wait,
	})
	doctor := p.doctorCommand(proxyRef, serviceRef(dns))
	steps = append(steps, Step{
		Title: "Judge the new objects beside the old ones",
		Why: []string{"doctor reads the new Services, their pods and the Corefile as it will run after the cut-over; " +
			"its DNS and HTTPS probes on the node addresses still reach the old path until the externalIPs go (above)."},
		Commands: []string{doctor},
	})
	steps = append(steps, cutOver(p, proxy, dns))
	steps = append(steps, Step{
		Title:    "Judge the new path alone",
		Why:      []string{"Now the node addresses' ports reach the new pods through portmap: the DNS and HTTPS probes go through them."},
		Commands: []string{doctor},
	})
	steps = append(steps, rollBack(p, proxy, dns))
	steps = append(steps, cleanUp(p, proxy, dns))
	return steps
}

func serviceRef(pt *part) string { return pt.service.Namespace + "/" + pt.service.Name }

// portList is "80/TCP, 443/TCP, 53/UDP, 53/TCP".
func portList(parts ...*part) string {
	out := make([]string, 0, 4)
	for _, pt := range parts {
		for _, sp := range pt.oldService.Spec.Ports {
			proto := string(sp.Protocol)
			if proto == "" {
				proto = "TCP"
			}
			out = append(out, fmt.Sprintf("%d/%s", sp.Port, proto))
		}
	}
	return strings.Join(out, ", ")
}

// helmStep writes the values and upgrades the release in place: the chart renders the
// DaemonSet under the Deployment's name and Helm deletes the Deployment after creating it; the
// release's Service (same selector, externalIPs kept) selects the new pods.
func helmStep(v *HelmValues, proxy *part) Step {
	why := []string{
		fmt.Sprintf("The proxy is the Helm release %s (chart %s): its values move it to a DaemonSet with hostPorts %s on the nodes below, "+
			"keeping its Service's externalIPs until the cut-over.", v.Release, v.Chart, hostPortList(proxy)),
		"Keep these values in the file you install the release from; `--reuse-values -f` merges them into the release's.",
	}
	if !v.Verified {
		why = append(why, fmt.Sprintf("The keys were read from chart %s; compare them with your chart's values.yaml (%s) before upgrading.", VerifiedTraefikChart, v.Chart))
	}
	values := remedy.YAML(v.Values)
	_, version := splitChartVersion(v.Chart)
	upgrade := []string{"helm", "upgrade", v.Release, "traefik/traefik", "-n", v.Namespace, "--reuse-values", "-f", ValuesFile}
	if version != "" {
		upgrade = append(upgrade, "--version", version)
	}
	return Step{
		Title:    "Move the proxy's release to a hostPort DaemonSet",
		Why:      why,
		Commands: []string{"cat > " + ValuesFile + " <<'EOF'\n" + values + "\nEOF", remedy.Command(upgrade...)},
	}
}

func hostPortList(pt *part) string {
	out := make([]string, 0, len(pt.hostPorts))
	for _, name := range portNames(pt.hostPorts) {
		out = append(out, fmt.Sprintf("%s=%d", name, pt.hostPorts[name]))
	}
	return strings.Join(out, ", ")
}

// splitChartVersion reads "traefik-41.3.0" as ("traefik", "41.3.0").
func splitChartVersion(chart string) (string, string) {
	i := strings.LastIndex(chart, "-")
	if i < 0 {
		return chart, ""
	}
	return chart[:i], chart[i+1:]
}

// cutOver removes the old Services' externalIPs (the new Services never had any).
func cutOver(p *Plan, proxy, dns *part) Step {
	remove := remedy.PatchOp{Op: "remove", Path: "/spec/externalIPs"}
	var cmds []string
	if p.Values != nil {
		key := p.Values.ExternalIPsKey
		if key == "" {
			cmds = append(cmds, remedy.Commentf("# Remove the externalIPs from the values of the Helm release %s (its chart's key for Service.spec.externalIPs), then helm upgrade.", p.Values.Release))
		} else {
			// Helm's values coalescing deletes a key set to null (helm pkg/chartutil coalesce.go).
			cmds = append(cmds, remedy.Command("helm", "upgrade", p.Values.Release, "traefik/traefik", "-n", p.Values.Namespace, "--reuse-values", "--set", key+"=null"))
		}
	} else {
		cmds = append(cmds, remedy.JSONPatch(proxy.oldService.Namespace, "service", proxy.oldService.Name, remove))
	}
	cmds = append(cmds, remedy.JSONPatch(dns.oldService.Namespace, "service", dns.oldService.Name, remove))
	why := []string{"The cut-over: the node addresses' ports fall through to portmap's rules, to the new pods on each node."}
	if p.Values != nil && p.Values.ExternalIPsKey != "" {
		why = append(why, "Remove "+p.Values.ExternalIPsKey+" from the values file too, or the next upgrade from it puts the externalIPs back.")
	}
	return Step{Title: "Cut over: remove the old Services' externalIPs", Why: why, Commands: cmds}
}

// rollBack puts the externalIPs back: the old path is whole until the old objects are deleted.
func rollBack(p *Plan, proxy, dns *part) Step {
	var cmds []string
	addrs := make([]string, len(p.Addresses))
	for i, a := range p.Addresses {
		addrs[i] = a.Addr.String()
	}
	if p.Values != nil {
		cmds = append(cmds, remedy.Command("helm", "rollback", p.Values.Release, "-n", p.Values.Namespace))
	} else {
		cmds = append(cmds, remedy.MergePatch(proxy.oldService.Namespace, "service", proxy.oldService.Name, map[string]any{"spec": map[string]any{"externalIPs": addrs}}))
	}
	cmds = append(cmds, remedy.MergePatch(dns.oldService.Namespace, "service", dns.oldService.Name, map[string]any{"spec": map[string]any{"externalIPs": addrs}}))
	return Step{
		Title:    "If doctor fails: put the externalIPs back",
		Why:      []string{"The old Deployments still run: the old path is back as soon as kube-proxy programs the externalIPs again."},
		Commands: cmds,
	}
}

// cleanUp deletes what the new form no longer needs.
func cleanUp(p *Plan, proxy, dns *part) Step {
	cmds := []string{}
	if p.Values == nil {
		cmds = append(cmds, remedy.Kubectl(proxy.oldWorkload.Namespace, "delete", "deployment/"+proxy.oldWorkload.Name, "service/"+proxy.oldService.Name))
	}
	cmds = append(cmds, remedy.Kubectl(dns.oldWorkload.Namespace, "delete", "deployment/"+dns.oldWorkload.Name, "service/"+dns.oldService.Name))
	why := []string{"Once doctor passes on the new path: the old Deployments and their Services (without externalIPs now) serve nothing the LAN reaches. " +
		"Keep an old Service if something in the cluster still calls it by name."}
	if p.Values != nil {
		why = append(why, "The release's own Service stays: it has no externalIPs now and serves the cluster.")
	}
	return Step{Title: "After doctor passes: delete the old objects", Why: why, Commands: cmds}
}
