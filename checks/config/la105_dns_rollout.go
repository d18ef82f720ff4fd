package config

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// lan-dns rollout safety. The seed's Linux section is why a brief outage matters here:
// systemd-resolved moves to the link's next server after one failed query and stays there, so a
// rollout that loses queries sends the workstations to the organisation's DNS until the link
// reconnects. Three things lose queries during a rollout or a drain:
//   - the old pod stops at SIGTERM while kube-proxy still sends it queries: an endpoint leaves
//     the rules only after the EndpointSlice update reaches every node's kube-proxy and its next
//     sync (minSyncPeriod, 1 s by default). CoreDNS's `health` plugin with `lameduck D` keeps
//     serving for D after SIGTERM (coredns/coredns v1.14.7 plugin/health/setup.go parse and
//     health.go OnShutdown: "Going into lameduck mode for D", then the servers stop); without
//     it the process stops at once;
//   - a new pod is an endpoint as soon as its containers run when it has no readinessProbe
//     (kubernetes/kubernetes pkg/controller/endpointslice: ready = the pod's Ready condition,
//     which without a readiness probe is true once the containers started), before CoreDNS
//     has read its Corefile and bound its port; `ready` answers 200 on :8181/ready once every
//     plugin that reports readiness is ready (plugin/ready/ready.go);
//   - the strategy stops pods before new ones serve: Recreate stops every pod first, and a
//     RollingUpdate with maxSurge 0 stops maxUnavailable pods before starting any.

// defaultLameduck is the duration the fix writes: kubeadm's and the CoreDNS chart's Corefile
// use 5s (kubernetes/kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go CoreDNSConfigMap).
const defaultLameduck = "5s"

// rolloutFindings are the rollout safety findings of the lan-dns Deployment.
func rolloutFindings(s *kube.Setup, dep *appsv1.Deployment, replicas int32, obj string) []engine.Finding {
	var out []engine.Finding
	if f, ok := strategyFinding(dep, replicas, obj); ok {
		out = append(out, f)
	}
	spec := &dep.Spec.Template.Spec
	if f, ok := lameduckFinding(s, spec, obj); ok {
		out = append(out, f)
	}
	if f, ok := readinessFinding(s, dep, obj); ok {
		out = append(out, f)
	}
	return out
}

// fenceposts resolves a RollingUpdate's maxSurge and maxUnavailable for replicas as the
// deployment controller does: surge rounded up, unavailable rounded down, and both 0 read as
// unavailable 1 (kubernetes/kubernetes pkg/controller/deployment/util/deployment_util.go
// ResolveFenceposts). Unset values are the API server's defaults, 25% each
// (pkg/apis/apps/v1/defaults.go SetDefaults_Deployment): a manifest read before admission has
// none written.
func fenceposts(ru *appsv1.RollingUpdateDeployment, replicas int32) (surge, unavailable int, err error) {
	quarter := intstr.FromString("25%")
	s, u := &quarter, &quarter
	if ru != nil {
		if ru.MaxSurge != nil {
			s = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			u = ru.MaxUnavailable
		}
	}
	if surge, err = intstr.GetScaledValueFromIntOrPercent(s, int(replicas), true); err != nil {
		return 0, 0, err
	}
	if unavailable, err = intstr.GetScaledValueFromIntOrPercent(u, int(replicas), false); err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

// strategyFinding: a strategy that stops DNS pods before new ones serve.
func strategyFinding(dep *appsv1.Deployment, replicas int32, obj string) (engine.Finding, bool) {
	fix := kube.ManagedNote(dep, "Deployment", "spec.strategy") + remedy.MergePatch(dep.Namespace, "deployment", dep.Name, map[string]any{"spec": map[string]any{
		"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 0, "maxSurge": 1}}}})
	f := engine.Finding{Code: "LA105-ROLLOUT-DROPS", Severity: engine.SeverityWarn, Object: obj, Remediation: fix}
	if dep.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		f.Message = "strategy Recreate: every rollout stops all the DNS pods before the new ones start, so the LAN's queries go unanswered meanwhile and systemd-resolved moves to the next server and stays there"
		f.Evidence = map[string]any{"strategy": string(dep.Spec.Strategy.Type)}
		return f, true
	}
	surge, unavailable, err := fenceposts(dep.Spec.Strategy.RollingUpdate, replicas)
	if err != nil {
		f.Code, f.Remediation = "LA105-ROLLOUT-UNKNOWN", ""
		f.Message = "the rolling update's maxSurge/maxUnavailable cannot be read (" + err.Error() + "): whether a rollout keeps a replica serving is not known"
		return f, true
	}
	f.Evidence = map[string]any{"replicas": replicas, "maxSurge": surge, "maxUnavailable": unavailable}
	switch {
	case int(replicas)-unavailable < 1:
		f.Message = fmt.Sprintf("%d replica(s) with maxUnavailable %d: the deployment controller may stop every old pod before a new one is ready, leaving no DNS during the rollout", replicas, unavailable)
	case surge == 0:
		f.Message = fmt.Sprintf("maxSurge 0 with maxUnavailable %d on %d replicas: a rollout first stops %d pod(s) before any new one exists, so fewer replicas serve the LAN until the new ones are ready", unavailable, replicas, unavailable)
	default:
		return engine.Finding{}, false
	}
	return f, true
}

// lameduck reads the `health` plugins of the Corefile: whether one exists and the longest
// lameduck it sets (health is process-wide: any server block's counts).
func lameduck(cf *corefile.Corefile) (health *corefile.Plugin, d time.Duration) {
	for i := range cf.Blocks {
		for _, p := range cf.Blocks[i].PluginsNamed("health") {
			p := &p
			if health == nil {
				health = p
			}
			for _, l := range p.Block {
				if l.Name != "lameduck" || len(l.Args) != 1 {
					continue
				}
				if v, err := time.ParseDuration(l.Args[0]); err == nil && v > d {
					health, d = p, v
				}
			}
		}
	}
	return health, d
}

// lameduckFinding: no `health { lameduck D }`, or a lameduck the grace period cuts short.
func lameduckFinding(s *kube.Setup, spec *corev1.PodSpec, obj string) (engine.Finding, bool) {
	cf := s.Corefile
	if cf == nil || len(cf.Incomplete) > 0 || !cf.Starts() {
		return engine.Finding{}, false // LA104 says what is not read or not started
	}
	health, d := lameduck(cf)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	f := engine.Finding{Code: "LA105-NO-LAMEDUCK", Severity: engine.SeverityWarn, Object: obj,
		Evidence: map[string]any{"lameduck": d.String(), "terminationGracePeriodSeconds": grace}}
	switch {
	case d > 0 && d < time.Duration(grace)*time.Second:
		return engine.Finding{}, false
	case d > 0:
		f.Message = fmt.Sprintf("`health` sets lameduck %s, but terminationGracePeriodSeconds is %d: the kubelet kills the process before the lameduck ends", d, grace)
		f.Remediation = remedy.Commentf("# lower the lameduck below %ds, or raise terminationGracePeriodSeconds above it\n", grace)
		return f, true
	case health == nil:
		f.Message = "the Corefile has no `health` plugin, so no lameduck: on a rollout or a drain the old pod stops at SIGTERM while kube-proxy may still send it the LAN's queries, which are lost"
	default:
		f.Message = "`health` without lameduck: at SIGTERM the process stops at once while kube-proxy may still send it the LAN's queries, which are lost"
	}
	if e, ok := setLameduck(s, cf, health); ok {
		f.Remediation = e.Remediation()
	}
	return f, true
}

// setLameduck writes `lameduck 5s` into the existing `health` (its arguments kept), or adds
// `health { lameduck 5s }` to the first block of the Corefile.
func setLameduck(s *kube.Setup, cf *corefile.Corefile, health *corefile.Plugin) (corefileEdit, bool) {
	if health == nil {
		for i := range cf.Blocks {
			if b := &cf.Blocks[i]; b.File == "" {
				return insertInBlock(s, b, 0, "health {\n    lameduck "+defaultLameduck+"\n}", "add `health` with a lameduck, so that a stopping pod keeps answering while it leaves the Service")
			}
		}
		return corefileEdit{}, false
	}
	f, ok := corefileSource(s, health.File)
	if !ok {
		return corefileEdit{}, false
	}
	ind := indentOf(f.Text, health.Line)
	if len(health.Block) > 0 {
		// a block of its own: one more line in it (a `lameduck` already there is replaced)
		for _, l := range health.Block {
			if l.Name == "lameduck" {
				return replaceLines(f, l.Line, l.Line, ind+"    lameduck "+defaultLameduck, "set the lameduck of `health`"), true
			}
		}
		return insertAfter(f, health.Line, ind+"    lameduck "+defaultLameduck, fmt.Sprintf("add a lameduck to `health` (after line %d)", health.Line)), true
	}
	if health.EndLine != health.Line {
		return corefileEdit{}, false // an empty block spread over lines: not rewritten blindly
	}
	head := strings.Join(append([]string{"health"}, health.Args...), " ")
	return replaceLines(f, health.Line, health.Line, ind+head+" {\n"+ind+"    lameduck "+defaultLameduck+"\n"+ind+"}", "give `health` a lameduck"), true
}

// readinessFinding: the CoreDNS container has no readinessProbe.
func readinessFinding(s *kube.Setup, dep *appsv1.Deployment, obj string) (engine.Finding, bool) {
	spec := &dep.Spec.Template.Spec
	c := kube.CoreDNSContainer(spec)
	if c == nil || c.ReadinessProbe != nil {
		return engine.Finding{}, false // a probe no plugin answers is LA105-PROBE-NO-LISTENER
	}
	idx := 0
	for i := range spec.Containers {
		if &spec.Containers[i] == c {
			idx = i
		}
	}
	f := engine.Finding{Code: "LA105-NO-READINESS", Severity: engine.SeverityWarn, Object: obj,
		Message:  fmt.Sprintf("container %s has no readinessProbe: a new pod becomes an endpoint as soon as its container runs, before CoreDNS serves, and the queries kube-proxy sends it meanwhile are lost", c.Name),
		Evidence: map[string]any{"container": c.Name}}
	probe := map[string]any{"httpGet": map[string]any{"path": "/ready", "port": 8181, "scheme": "HTTP"}, "periodSeconds": 2}
	patch := kube.ManagedNote(dep, "Deployment", "spec.template.spec.containers") + remedy.JSONPatch(dep.Namespace, "deployment", dep.Name,
		remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/template/spec/containers/%d/readinessProbe", idx), Value: probe})
	cf := s.Corefile
	switch {
	case cf == nil || len(cf.Incomplete) > 0:
		f.Remediation = remedy.Comment("add `ready` to the Corefile (it answers :8181/ready), then:") + "\n" + patch
	case !cf.Starts():
		// an edit of a Corefile CoreDNS refuses would be refused too: LA104 says why first
		f.Remediation = remedy.Comment("CoreDNS refuses this Corefile (LA104), so this fix cannot be proven here: fix the Corefile, then add `ready` and a readinessProbe GETting :8181/ready")
	case listenerOn(cf, 8181, "/ready") != "":
		f.Remediation = patch
	default:
		e, ok := addListener(s, cf, "ready", 8181)
		if !ok {
			f.Remediation = remedy.Comment("add `ready` to the Corefile (it answers :8181/ready), then:") + "\n" + patch
			break
		}
		// the Corefile first: a probe on a port nothing listens on keeps every new pod unready
		f.Remediation = e.Remediation() + "\n" + patch
	}
	return f, true
}
