package vpn

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// VPNDurability is VPN003: does a new pod get ip_forward=1? The manifest can set it; so can
// the node and the CNI (see vpn003_origin.go), and a 1 that none of them explains was set by
// hand: the next pod loses it. The check says where the pod's value comes from and judges
// which fix the cluster will admit, the CNI's included.
func VPNDurability(env *Env) engine.Check {
	return judged(env, "VPN003", facts.NeedForwarding|facts.NeedDurability|facts.NeedOrigin, judgeDurabilityRun)
}

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
	if restricted {
		why = append(why, fmt.Sprintf("namespace %s enforces Pod Security %q, which rejects both a privileged container and an unsafe sysctl: label it pod-security.kubernetes.io/enforce=privileged (the OpenVPN container's NET_ADMIN already needs that)", owner.Namespace, d.PodSecurity))
	}
	return variant, strings.Join(why, "; ")
}

func judgeDurabilityRun(run *facts.Run) engine.Outcome {
	fs := make([]engine.Finding, 0, 2*len(run.Pods))
	var unknown []error
	for _, p := range run.Pods {
		d := durabilityOf(p)
		fs = append(fs, durabilityFindings(run, p, d)...)
		if p.ForwardingErr != nil && len(d.Explained) == 0 {
			unknown = append(unknown, p.ForwardingErr)
		}
	}
	if len(unknown) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: errors.Join(unknown...)}
	}
	return engine.Outcome{Findings: fs}
}

func (d durability) evidence() map[string]any {
	ev := map[string]any{"owner": d.Owner.String(), "fixVariant": d.Variant, "why": d.VariantWhy}
	if len(d.Explained) > 0 {
		ev["setBy"] = d.Explained
	}
	if d.in.PodSecurity != "" {
		ev["podSecurityEnforce"] = d.in.PodSecurity
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

func durabilityFindings(run *facts.Run, p *facts.Pod, d durability) []engine.Finding {
	obj, ev := p.Object(), d.evidence()
	o := originOf(run, p)
	o.addEvidence(ev)
	fix := forwardingFix(d)
	var fs []engine.Finding
	for _, b := range d.Broken {
		fs = append(fs, engine.Finding{Code: "VPN003-FIX-BROKEN", Severity: engine.SeverityWarn, Object: obj, Message: b, Evidence: ev, Remediation: fix})
	}
	for _, msg := range d.in.SysctlForbidden {
		fs = append(fs, engine.Finding{Code: "VPN003-SYSCTL-FORBIDDEN", Severity: engine.SeverityWarn, Object: obj, Message: "the kubelet refused a sysctl in this namespace: " + msg})
	}
	how := strings.Join(d.Explained, "; ")
	if d.ChartSwitch != "" {
		how = strings.TrimPrefix(how+"; the chart switch "+d.ChartSwitch, "; ")
	}
	f, ferr := p.Forwarding, p.ForwardingErr
	switch {
	case ferr != nil && d.inManifest():
		fs = append(fs, engine.Finding{Code: "VPN003-SET-LIVE-UNREAD", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: "the manifest sets forwarding (" + how + "); the live value could not be read: " + ferr.Error()})
	case ferr != nil:
		fs = append(fs, engine.Finding{Code: "VPN003-NOT-IN-MANIFEST", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: fix,
			Message: "nothing in the manifest sets net.ipv4.ip_forward: whatever the pod has now, a new replica starts from what its node and CNI give it (" + newPodSays(o) + ")"})
	case f.Value == "1" && d.inManifest():
		fs = append(fs, engine.Finding{Code: "VPN003-SET-BY-MANIFEST", Severity: engine.SeverityInfo, Object: obj, Evidence: ev, Message: "ip_forward = 1 and the manifest sets it: " + how})
	case f.Value == "1":
		fs = append(fs, oneWithoutManifest(run, p, d, o, ev, fix))
	case d.inManifest():
		fs = append(fs, engine.Finding{Code: "VPN003-DID-NOT-TAKE", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: fix,
			Message: "the manifest means to set forwarding (" + how + ") yet the pod reads ip_forward = 0: the setting did not take (check the init container's logs and privileges)"})
		fs = append(fs, zeroOrigin(run, p, o))
	default:
		fs = append(fs, engine.Finding{Code: "VPN003-OFF-NOT-IN-MANIFEST", Severity: engine.SeverityFail, Object: obj, Evidence: ev, Remediation: fix,
			Message: "ip_forward = 0 and nothing in " + d.Owner.String() + "'s manifest sets it; fix: " + d.VariantWhy})
		fs = append(fs, zeroOrigin(run, p, o))
	}
	if msg, clusterAllows := calicoDrift(run, o); msg != "" {
		drift := engine.Finding{Code: "VPN003-CNI-DRIFT", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Message: msg}
		if ds := calicoDaemonSet(run); clusterAllows {
			drift.Remediation = remedy.Kubectl(ds.Namespace, "rollout", "restart", "daemonset/"+ds.Name)
		} else if cf, ok := cniFix(run, p); ok {
			drift.Message += "; the node's value is lost at that start"
			drift.Remediation = cf
		}
		fs = append(fs, drift)
	}
	return fs
}

// newPodSays is what a new pod would start with, in words.
func newPodSays(o origin) string {
	if o.NewPod == "" {
		return "which could not be told: " + strings.Join(o.Unknown, "; ")
	}
	return "ip_forward=" + o.NewPod + ": " + o.sentence()
}

// handFixLifetime is how long a value written into a running pod lasts.
const handFixLifetime = "it lasts as long as this pod's sandbox (its network namespace): a container restart keeps it, a new pod (a rollout, an eviction, a rescheduling) or a recreated sandbox (a node reboot) starts again from what the node and the CNI give"

// oneWithoutManifest judges a 1 that the manifest does not explain: the node's or the CNI's
// for every new pod, or a hand fix, or unknown.
func oneWithoutManifest(run *facts.Run, p *facts.Pod, d durability, o origin, ev map[string]any, fix string) engine.Finding {
	obj := p.Object()
	switch {
	case o.NewPod == "1" && o.ByCNI:
		return engine.Finding{Code: "VPN003-SET-BY-CNI", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: "ip_forward = 1, set for every new pod by the CNI, not by the manifest: " + o.sentence()}
	case o.NewPod == "1":
		return engine.Finding{Code: "VPN003-SET-BY-NODE", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: "ip_forward = 1, inherited by every new pod on this node, not set by the manifest: " + o.sentence() + " (a node with 0 would give 0: the manifest fix removes the dependency)"}
	case o.NewPod == "0":
		return engine.Finding{Code: "VPN003-HAND-FIX", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: withCNIFix(run, p, o, fix),
			Message: "ip_forward = 1 but nothing in " + d.Owner.String() + "'s manifest sets it and a new pod starts with 0 (" + o.sentence() + "): a hand fix (kubectl exec ... sysctl -w); " + handFixLifetime}
	}
	return engine.Finding{Code: "VPN003-UNEXPLAINED-ONE", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: fix,
		Message: "ip_forward = 1 and nothing in " + d.Owner.String() + "'s manifest sets it; whether a new pod gets 1 too could not be told (" + strings.Join(o.Unknown, "; ") + "): it is a hand fix unless the node or the CNI gives it"}
}

// zeroOrigin says where a pod's 0 comes from, with the CNI-level fix when the CNI writes it.
func zeroOrigin(run *facts.Run, p *facts.Pod, o origin) engine.Finding {
	f := engine.Finding{Code: "VPN003-ORIGIN-UNKNOWN", Severity: engine.SeverityInfo, Object: p.Object(), Evidence: map[string]any{}}
	o.addEvidence(f.Evidence)
	switch {
	case o.NewPod == "0" && o.ByCNI:
		f.Code, f.Message = "VPN003-ORIGIN-CNI", "the 0 is the CNI's: "+o.sentence()
		if cf, ok := cniFix(run, p); ok {
			f.Message += "; the CNI can give every new pod 1 instead, once for the cluster and without privilege"
			f.Remediation = cf
		} else if o.Calico {
			f.Message += "; Calico's cluster configuration was not found through the API (" + calicoNotFound(run) + "): set container_settings.allow_ip_forwarding to true where your installer renders the CNI configuration (this cannot be proven from here)"
		}
	case o.NewPod == "0":
		f.Code, f.Message = "VPN003-ORIGIN-NODE", "the 0 is inherited, and no CNI plugin here writes ip_forward: "+o.sentence()
	case o.NewPod == "1":
		f.Message = "a new pod here would start with 1 (" + o.sentence() + "), yet this pod reads 0: it was set later (by hand, or by the image's start script), or the node's value or its CNI configuration changed since the pod started"
	default:
		f.Message = "where the 0 comes from could not be told: " + strings.Join(o.Unknown, "; ")
	}
	return f
}

// withCNIFix adds the CNI-level fix to the manifest fix when the CNI writes the 0.
func withCNIFix(run *facts.Run, p *facts.Pod, o origin, fix string) string {
	if !o.ByCNI || o.NewPod != "0" {
		return fix
	}
	cf, ok := cniFix(run, p)
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
