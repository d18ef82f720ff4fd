package vpn

import (
	"errors"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// VPNDurability is VPN003: does a new pod get ip_forward=1? The manifest can set it; so can
// the node and the CNI (see forwarding_origin.go), and a 1 that none of them explains was set by
// hand: the next pod loses it. The check says where the pod's value comes from and judges
// which fix the cluster will admit, the CNI's included.
func VPNDurability(env *Env) engine.Check {
	return judged(env, "VPN003", facts.NeedForwarding|facts.NeedDurability|facts.NeedOrigin, judgeDurabilityRun)
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
	if msg, clusterAllows := calicoDrift(run, o); msg != "" && o.Writer == "calico" {
		drift := engine.Finding{Code: "VPN003-CNI-DRIFT", Severity: engine.SeverityWarn, Object: obj, Evidence: ev, Message: msg}
		if ds := calicoDaemonSet(run); clusterAllows {
			drift.Remediation = remedy.Kubectl(ds.Namespace, "rollout", "restart", "daemonset/"+ds.Name)
		} else if cf, ok := calicoFix(run, p, o); ok {
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
		if cf, ok := calicoFix(run, p, o); ok {
			f.Message += "; the CNI can give every new pod 1 instead, once for the cluster and without privilege"
			f.Remediation = cf
		} else if o.Writer == "tuning" {
			f.Message += `; the tuning plugin has the last word: a CNI-level fix sets net.ipv4.ip_forward to "1" in its sysctl map in ` + o.File +
				" where that file is written (what writes it is not known from here, so no command is printed), then replaces the pods"
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
