package vpn

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
)

// Whether the pod's forwarding lasts: what its manifest (initContainers, securityContext.sysctls,
// a chart's switch) says about ip_forward, and the fix that fits the kubelet and the namespace.
// VPN003 judges it; VPN002 and VPN008 name it in their own findings.

// durability is what the spec says about making ip_forward stick, and the fix to offer.
type durability struct {
	Owner facts.Workload
	// Explained says how the spec sets ip_forward=1; Broken how it tries and cannot.
	Explained []string
	Broken    []string
	// ChartSwitch is a label or annotation that looks like the chart's forwarding switch;
	// Chart is the helm.sh/chart label.
	ChartSwitch string
	Chart       string
	Variant     string
	VariantWhy  string
	in          facts.Durability
}

// inManifest reports whether the manifest sets forwarding (the spec or the chart's switch).
func (d durability) inManifest() bool { return len(d.Explained) > 0 || d.ChartSwitch != "" }

func durabilityOf(p *facts.Pod) durability {
	d := durability{Owner: p.Owner, in: p.Durability}
	d.Explained, d.Broken = forwardingInSpec(p.Pod, p.Durability.Scripts)
	metas := []metav1.ObjectMeta{p.Pod.ObjectMeta}
	if p.Owner.Meta != nil {
		metas = append(metas, *p.Owner.Meta)
	}
	d.ChartSwitch, d.Chart = chartSwitch(metas)
	d.Variant, d.VariantWhy = chooseVariant(p.Durability, p.Owner, p.Pod.Spec.NodeName)
	return d
}

// writesForward matches a command or script that turns forwarding on.
var writesForward = regexp.MustCompile(`(?i)(net[./]ipv4[./]ip_forward\s*=\s*1|echo\s+1\s*>+\s*/proc/sys/net/ipv4/ip_forward)`)

// forwardingInSpec finds what in the pod spec turns forwarding on. Writing /proc/sys needs a
// privileged container (the runtime mounts it read-only otherwise); securityContext.sysctls
// is applied by the kubelet before any container starts.
func forwardingInSpec(pod *corev1.Pod, scripts map[string]string) (explained, broken []string) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if s.Name != "net.ipv4.ip_forward" && s.Name != "net/ipv4/ip_forward" {
				continue
			}
			if strings.TrimSpace(s.Value) == "1" {
				explained = append(explained, "securityContext.sysctls sets net.ipv4.ip_forward=1 (applied by the kubelet)")
			} else {
				broken = append(broken, fmt.Sprintf("securityContext.sysctls sets net.ipv4.ip_forward=%q", s.Value))
			}
		}
	}
	check := func(kind string, c corev1.Container) {
		text := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		switch {
		case !writesForward.MatchString(text):
		case privileged(c):
			explained = append(explained, fmt.Sprintf("%s %s runs %q (privileged)", kind, c.Name, truncateWords(text, 120)))
		default:
			broken = append(broken, fmt.Sprintf("%s %s writes ip_forward but is not privileged: /proc/sys is read-only there, so the write fails", kind, c.Name))
		}
	}
	for _, c := range pod.Spec.InitContainers {
		check("initContainer", c)
	}
	for _, c := range pod.Spec.Containers {
		check("container", c)
	}
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			script, ok := scripts[m.Name]
			switch {
			case !ok || !writesForward.MatchString(script):
			case privileged(c):
				explained = append(explained, fmt.Sprintf("a script mounted from volume %s into privileged container %s writes ip_forward=1 (if the container runs it at start)", m.Name, c.Name))
			default:
				broken = append(broken, fmt.Sprintf("a script mounted from volume %s into container %s writes ip_forward, but the container is not privileged", m.Name, c.Name))
			}
		}
	}
	return explained, broken
}

func privileged(c corev1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

func truncateWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// chartSwitch looks for a forwarding switch (such as ipForwardInitContainer) in the labels and
// annotations of the pod and its owner, where charts record their values.
func chartSwitch(metas []metav1.ObjectMeta) (string, string) {
	chart := ""
	for _, m := range metas {
		if c := m.Labels["helm.sh/chart"]; c != "" && chart == "" {
			chart = c
		}
		for _, kv := range []map[string]string{m.Labels, m.Annotations} {
			for _, k := range sortedKeys(kv) {
				norm := strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(k + "=" + kv[k]))
				if strings.Contains(norm, "ipforward") {
					return k + "=" + kv[k], chart
				}
			}
		}
	}
	return "", chart
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// allowlisted reports whether the kubelet allowlist admits net.ipv4.ip_forward ("net.ipv4.*"
// patterns included).
func allowlisted(list []string) bool {
	for _, s := range list {
		s = strings.ReplaceAll(s, "/", ".")
		if s == "net.ipv4.ip_forward" || (strings.HasSuffix(s, "*") && strings.HasPrefix("net.ipv4.ip_forward", strings.TrimSuffix(s, "*"))) {
			return true
		}
	}
	return false
}

// chooseVariant picks the fix the cluster will admit. securityContext.sysctls needs no
// privilege but only works if the kubelet allowlists the sysctl; a privileged initContainer
// works on any kubelet but needs a namespace whose Pod Security level is privileged.
func chooseVariant(d facts.Durability, owner facts.Workload, node string) (string, string) {
	restricted := d.PodSecurity == "baseline" || d.PodSecurity == "restricted"
	var why []string
	variant := variantInitContainer
	switch {
	case len(d.SysctlForbidden) > 0:
		why = append(why, "SysctlForbidden events show the kubelet refusing securityContext.sysctls, so a privileged initContainer")
	case d.AllowlistErr == nil && allowlisted(d.Allowlist):
		variant = variantSysctls
		why = append(why, fmt.Sprintf("the kubelet on %s allowlists net.ipv4.ip_forward (allowedUnsafeSysctls %v), so securityContext.sysctls, which needs no privilege", node, d.Allowlist))
	case d.AllowlistErr == nil:
		why = append(why, fmt.Sprintf("the kubelet on %s does not allowlist net.ipv4.ip_forward (allowedUnsafeSysctls %v): a pod asking for it through securityContext.sysctls would be rejected (SysctlForbidden), so a privileged initContainer", node, d.Allowlist))
	default:
		why = append(why, "the kubelet allowlist is unknown ("+d.AllowlistErr.Error()+"), so a privileged initContainer, which works on any kubelet")
	}
	if len(d.Admissions) > 0 {
		variant, why = admittedVariant(d, owner, variant, why)
		return variant, strings.Join(why, "; ")
	}
	if restricted {
		why = append(why, fmt.Sprintf("namespace %s enforces Pod Security %q, which rejects both a privileged container and an unsafe sysctl: label it pod-security.kubernetes.io/enforce=privileged (the OpenVPN container's NET_ADMIN already needs that); read from the namespace label, %s", owner.Namespace, d.PodSecurity, d.NotProven))
	}
	return variant, strings.Join(why, "; ")
}

// admittedVariant takes the API server's word (--prove-fixes: a dry-run pod carrying each
// variant) over the namespace label: it runs Pod Security, ValidatingAdmissionPolicies and
// webhooks, which a label cannot tell. A refused variant gives way to the other when the API
// server admits that one and the kubelet can run it (the sysctl variant only where the
// kubelet allowlists the sysctl, which admission does not check).
func admittedVariant(d facts.Durability, owner facts.Workload, variant string, why []string) (string, []string) {
	a := d.Admissions[variant]
	if a.Admitted {
		return variant, append(why, "the API server admits a pod carrying it (dry-run, --prove-fixes)")
	}
	other := variantSysctls
	if variant == variantSysctls {
		other = variantInitContainer
	}
	runnable := other == variantInitContainer || (d.AllowlistErr == nil && allowlisted(d.Allowlist))
	if o := d.Admissions[other]; o.Admitted && runnable {
		return other, append(why, fmt.Sprintf("but the API server refuses a pod carrying it (dry-run: %s), and admits one with %s instead, so %s", a.Refusal, other, other))
	}
	why = append(why, fmt.Sprintf("the API server refuses a pod carrying it (dry-run: %s)", a.Refusal))
	if o := d.Admissions[other]; !o.Admitted {
		why = append(why, fmt.Sprintf("and one carrying %s too (dry-run: %s)", other, o.Refusal))
	}
	if d.PodSecurity != "" && d.PodSecurity != "privileged" {
		why = append(why, fmt.Sprintf("namespace %s enforces Pod Security %q: label it pod-security.kubernetes.io/enforce=privileged (the OpenVPN container's NET_ADMIN already needs that), or ask whoever wrote the refusing policy", owner.Namespace, d.PodSecurity))
	}
	return variant, why
}

func (d durability) evidence() map[string]any {
	ev := map[string]any{"owner": d.Owner.String(), "fixVariant": d.Variant, "why": d.VariantWhy}
	if len(d.Explained) > 0 {
		ev["setBy"] = d.Explained
	}
	if d.in.PodSecurity != "" {
		ev["podSecurityEnforce"] = d.in.PodSecurity
	}
	if len(d.in.Admissions) == 0 {
		ev["admission"] = d.in.NotProven
	} else {
		adm := map[string]string{}
		for v, a := range d.in.Admissions {
			adm[v] = "admitted (dry-run)"
			if !a.Admitted {
				adm[v] = "refused (dry-run): " + a.Refusal
			}
		}
		ev["admission"] = adm
	}
	if d.in.AllowlistErr == nil {
		ev["allowedUnsafeSysctls"] = d.in.Allowlist
	} else {
		ev["allowedUnsafeSysctls"] = "unknown: " + d.in.AllowlistErr.Error()
	}
	if d.Chart != "" {
		ev["chart"] = d.Chart
	}
	return ev
}

// handFixLifetime is how long a value written into a running pod lasts.
const handFixLifetime = "it lasts as long as this pod's sandbox (its network namespace): a container restart keeps it, a new pod (a rollout, an eviction, a rescheduling) or a recreated sandbox (a node reboot) starts again from what the node and the CNI give"

// withCNIFix adds the CNI-level fix to the manifest fix when the CNI writes the 0.
func withCNIFix(run *facts.Run, p *facts.Pod, o origin, fix string) string {
	if !o.ByCNI || o.NewPod != "0" {
		return fix
	}
	cf, ok := calicoFix(run, p, o)
	if !ok {
		return fix
	}
	return fix + "\n# or, once for the cluster and without privilege, let the CNI write 1:\n" + cf
}

func calicoNotFound(run *facts.Run) string {
	var why []string
	if err := run.CNI.Calico.InstallationErr; err != nil {
		why = append(why, err.Error())
	}
	if err := run.CNI.Calico.ConfigErr; err != nil {
		why = append(why, err.Error())
	}
	if len(why) == 0 {
		return "no Installation, no ConfigMap"
	}
	return strings.Join(why, "; ")
}
