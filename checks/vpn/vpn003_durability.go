package vpn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// VPNDurability is VPN003: is ip_forward=1 part of the pod's manifest? A 1 that the spec does
// not explain was set by hand and the next restart, or the next replica, loses it. The check
// also gathers the admission facts that decide which fix can be admitted.
func VPNDurability(env *Env) engine.Check {
	t := vpnTraceFor(env)
	return catalogue.Check("VPN003", func(ctx context.Context) engine.Outcome { return t.durabilityOutcome(ctx) })
}

// durabilityFact is what the spec and the cluster say about making ip_forward stick.
type durabilityFact struct {
	Owner workloadRef
	// Explained says how the spec sets ip_forward=1; Broken how it tries and cannot.
	Explained []string
	Broken    []string
	// ChartSwitch is a label or annotation that looks like the chart's forwarding switch;
	// Chart is the helm.sh/chart label.
	ChartSwitch string
	Chart       string
	// PodSecurity is the namespace's enforce level ("" = none, which admits everything).
	PodSecurity string
	// Allowlist is the node kubelet's allowedUnsafeSysctls; AllowlistErr why it is unknown.
	Allowlist    []string
	AllowlistErr error
	// SysctlForbidden are the messages of the namespace's SysctlForbidden events.
	SysctlForbidden []string
	Variant         string
	VariantWhy      string
}

// writesForward matches a command or script that turns forwarding on.
var writesForward = regexp.MustCompile(`(?i)(net[./]ipv4[./]ip_forward\s*=\s*1|echo\s+1\s*>+\s*/proc/sys/net/ipv4/ip_forward)`)

func (t *vpnTrace) podDurability(ctx context.Context, p *vpnPod) (durabilityFact, error) {
	return p.durability.get(ctx, func(ctx context.Context) (durabilityFact, error) {
		d := durabilityFact{Owner: t.podOwner(ctx, p)}
		d.Explained, d.Broken = forwardingInSpec(p.Pod, t.mountedScripts(ctx, p.Pod))
		d.ChartSwitch, d.Chart = t.chartSwitch(ctx, p.Pod, d.Owner)
		if ns, err := t.env.Client.CoreV1().Namespaces().Get(ctx, p.Ref.Namespace, metav1.GetOptions{}); err == nil {
			d.PodSecurity = ns.Labels["pod-security.kubernetes.io/enforce"]
		}
		d.Allowlist, d.AllowlistErr = t.kubeletAllowlist(ctx, p.Pod.Spec.NodeName)
		if evs, err := t.env.Client.CoreV1().Events(p.Ref.Namespace).List(ctx, metav1.ListOptions{}); err == nil {
			for _, e := range evs.Items {
				if e.Reason == "SysctlForbidden" {
					d.SysctlForbidden = append(d.SysctlForbidden, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message))
				}
			}
		}
		d.Variant, d.VariantWhy = chooseVariant(d, p.Pod.Spec.NodeName)
		return d, nil
	})
}

// forwardingInSpec finds what in the pod spec turns forwarding on. Writing /proc/sys needs a
// privileged container (the runtime mounts it read-only otherwise); securityContext.sysctls
// is applied by the kubelet before any container starts.
func forwardingInSpec(pod *corev1.Pod, scripts map[string]string) (explained, broken []string) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if s.Name == "net.ipv4.ip_forward" || s.Name == "net/ipv4/ip_forward" {
				if strings.TrimSpace(s.Value) == "1" {
					explained = append(explained, "securityContext.sysctls sets net.ipv4.ip_forward=1 (applied by the kubelet)")
				} else {
					broken = append(broken, fmt.Sprintf("securityContext.sysctls sets net.ipv4.ip_forward=%q", s.Value))
				}
			}
		}
	}
	check := func(kind string, c corev1.Container) {
		text := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		if !writesForward.MatchString(text) {
			return
		}
		if privileged(c) {
			explained = append(explained, fmt.Sprintf("%s %s runs %q (privileged)", kind, c.Name, truncateWords(text, 120)))
		} else {
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
			if !ok || !writesForward.MatchString(script) {
				continue
			}
			if privileged(c) {
				explained = append(explained, fmt.Sprintf("a script mounted from volume %s into privileged container %s writes ip_forward=1 (if the container runs it at start)", m.Name, c.Name))
			} else {
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

// mountedScripts returns, per volume name, the text of the ConfigMaps the pod mounts (charts
// often start OpenVPN through such a script). Unreadable ConfigMaps are simply not inspected.
func (t *vpnTrace) mountedScripts(ctx context.Context, pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, err := t.env.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		var b strings.Builder
		for _, k := range sortedMapKeys(cm.Data) {
			b.WriteString(cm.Data[k])
			b.WriteByte('\n')
		}
		out[v.Name] = b.String()
	}
	return out
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// chartSwitch looks for a forwarding switch (such as ipForwardInitContainer) in the labels and
// annotations of the pod and its owner, where charts record their values.
func (t *vpnTrace) chartSwitch(ctx context.Context, pod *corev1.Pod, owner workloadRef) (string, string) {
	metas := []metav1.ObjectMeta{pod.ObjectMeta}
	if owner.Kind == "Deployment" {
		if d, err := t.env.Client.AppsV1().Deployments(owner.Namespace).Get(ctx, owner.Name, metav1.GetOptions{}); err == nil {
			metas = append(metas, d.ObjectMeta)
		}
	}
	chart := ""
	for _, m := range metas {
		if c := m.Labels["helm.sh/chart"]; c != "" && chart == "" {
			chart = c
		}
		for _, kv := range []map[string]string{m.Labels, m.Annotations} {
			for _, k := range sortedMapKeys(kv) {
				norm := strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(k + "=" + kv[k]))
				if strings.Contains(norm, "ipforward") {
					return k + "=" + kv[k], chart
				}
			}
		}
	}
	return "", chart
}

// kubeletAllowlist reads allowedUnsafeSysctls from the node's kubelet configuration, which
// needs get on nodes/proxy (often not granted: then it is unknown, and said so).
func (t *vpnTrace) kubeletAllowlist(ctx context.Context, node string) ([]string, error) {
	if node == "" {
		return nil, errors.New("the pod has no node")
	}
	raw, err := t.configz(ctx, node)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the kubelet of node %s does not serve /configz", node)
	case err != nil:
		return nil, fmt.Errorf("kubelet configuration of node %s not readable (needs get on nodes/proxy): %w", node, err)
	}
	var cz struct {
		KubeletConfig struct {
			AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cz); err != nil {
		return nil, fmt.Errorf("kubelet configuration of node %s: %w", node, err)
	}
	return cz.KubeletConfig.AllowedUnsafeSysctls, nil
}

// restConfigz reads /api/v1/nodes/N/proxy/configz through the clientset's REST client.
func restConfigz(client kubernetes.Interface) func(ctx context.Context, node string) ([]byte, error) {
	return func(ctx context.Context, node string) ([]byte, error) {
		if client == nil {
			return nil, errors.New("no API client")
		}
		rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
		if !ok || rc == nil {
			return nil, errors.New("no REST client to reach the node proxy")
		}
		return rc.Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	}
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
func chooseVariant(d durabilityFact, node string) (string, string) {
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
		why = append(why, fmt.Sprintf("namespace %s enforces Pod Security %q, which rejects both a privileged container and an unsafe sysctl: label it pod-security.kubernetes.io/enforce=privileged (the OpenVPN container's NET_ADMIN already needs that)", d.Owner.Namespace, d.PodSecurity))
	}
	return variant, strings.Join(why, "; ")
}

func (t *vpnTrace) durabilityOutcome(ctx context.Context) engine.Outcome {
	pods, err := t.vpnPods(ctx)
	if err != nil {
		return engine.Outcome{Err: err}
	}
	type res struct {
		fwd    forwardingFact
		fwdErr error
		d      durabilityFact
	}
	rs := forEachPod(ctx, pods.Running, func(ctx context.Context, p *vpnPod) res {
		f, ferr := t.podForwarding(ctx, p)
		d, _ := t.podDurability(ctx, p)
		return res{f, ferr, d}
	})
	var fs []engine.Finding
	var unknown []error
	for i, r := range rs {
		p := pods.Running[i]
		fs = append(fs, durabilityFindings(p, r.fwd, r.fwdErr, r.d)...)
		if r.fwdErr != nil && len(r.d.Explained) == 0 {
			unknown = append(unknown, r.fwdErr)
		}
	}
	if len(unknown) > 0 && !engine.HasSeverity(fs, engine.SeverityFail) {
		return engine.Outcome{Findings: fs, Err: errors.Join(unknown...)}
	}
	return engine.Outcome{Findings: fs}
}

func durabilityFindings(p *vpnPod, f forwardingFact, ferr error, d durabilityFact) []engine.Finding {
	obj := p.object()
	ev := map[string]any{"owner": d.Owner.String(), "fixVariant": d.Variant, "why": d.VariantWhy}
	if len(d.Explained) > 0 {
		ev["setBy"] = d.Explained
	}
	if d.PodSecurity != "" {
		ev["podSecurityEnforce"] = d.PodSecurity
	}
	if d.AllowlistErr == nil {
		ev["allowedUnsafeSysctls"] = d.Allowlist
	} else {
		ev["allowedUnsafeSysctls"] = "unknown: " + d.AllowlistErr.Error()
	}
	if d.Chart != "" {
		ev["chart"] = d.Chart
	}
	fix := forwardingFixYAML(d.Owner, d.Variant)
	if d.Chart != "" && d.ChartSwitch == "" {
		fix = "# installed by the chart " + d.Chart + ": if it has a forwarding switch (stable/openvpn: ipForwardInitContainer: true), set it in your values instead of patching\n" + fix
	}
	var fs []engine.Finding
	for _, b := range d.Broken {
		fs = append(fs, engine.Finding{Code: "VPN003-FIX-BROKEN", Severity: engine.SeverityWarn, Object: obj, Message: b, Evidence: ev, Remediation: fix})
	}
	for _, msg := range d.SysctlForbidden {
		fs = append(fs, engine.Finding{Code: "VPN003-SYSCTL-FORBIDDEN", Severity: engine.SeverityWarn, Object: obj, Message: "the kubelet refused a sysctl in this namespace: " + msg})
	}
	explained := len(d.Explained) > 0 || d.ChartSwitch != ""
	how := strings.Join(d.Explained, "; ")
	if d.ChartSwitch != "" {
		how = strings.TrimPrefix(how+"; the chart switch "+d.ChartSwitch, "; ")
	}
	switch {
	case ferr != nil && explained:
		fs = append(fs, engine.Finding{Code: "VPN003-SET-LIVE-UNREAD", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: "the manifest sets forwarding (" + how + "); the live value could not be read: " + ferr.Error()})
	case ferr != nil:
		fs = append(fs, engine.Finding{Code: "VPN003-NOT-IN-MANIFEST", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: fix,
			Message: "nothing in the manifest sets net.ipv4.ip_forward: whatever the pod has now, a new replica starts from the image's default"})
	case f.Value == "1" && explained:
		fs = append(fs, engine.Finding{Code: "VPN003-SET-BY-MANIFEST", Severity: engine.SeverityInfo, Object: obj, Evidence: ev, Message: "ip_forward = 1 and the manifest sets it: " + how})
	case f.Value == "1":
		fs = append(fs, engine.Finding{Code: "VPN003-HAND-FIX", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: fix,
			Message: "ip_forward = 1 but nothing in " + d.Owner.String() + "'s manifest sets it: a hand fix (kubectl exec ... sysctl -w) that the next restart or the next replica loses"})
	case explained:
		fs = append(fs, engine.Finding{Code: "VPN003-DID-NOT-TAKE", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Remediation: fix,
			Message: "the manifest means to set forwarding (" + how + ") yet the pod reads ip_forward = 0: the setting did not take (check the init container's logs and privileges)"})
	default:
		fs = append(fs, engine.Finding{Code: "VPN003-OFF-NOT-IN-MANIFEST", Severity: engine.SeverityFail, Object: obj, Evidence: ev, Remediation: fix,
			Message: "ip_forward = 0 and nothing in " + d.Owner.String() + "'s manifest sets it; fix: " + d.VariantWhy})
	}
	return fs
}
