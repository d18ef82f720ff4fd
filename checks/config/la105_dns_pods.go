package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// httpListeners are the plugins that serve the pods' probes, with their default port and path
// (plugin/health: :8080/health, plugin/ready: :8181/ready). Both are process-wide listeners.
var httpListeners = []struct{ plugin, port, path string }{
	{"health", "8080", "/health"},
	{"ready", "8181", "/ready"},
}

// probeTarget is where an httpGet probe of the CoreDNS container goes.
type probeTarget struct {
	kind, path string
	port       int32
}

func probesOf(c *corev1.Container) []probeTarget {
	var out []probeTarget
	for kind, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		port := p.HTTPGet.Port
		n := port.IntVal
		if port.Type == intstr.String {
			n = 0
			for _, cp := range c.Ports {
				if cp.Name == port.StrVal {
					n = cp.ContainerPort
				}
			}
		}
		if n > 0 {
			out = append(out, probeTarget{kind: kind, path: p.HTTPGet.Path, port: n})
		}
	}
	return out
}

// listenerOn names the Corefile plugin that answers HTTP on port and path, "" when none.
func listenerOn(cf *corefile.Corefile, port int32, path string) string {
	for _, l := range httpListeners {
		if l.path != path {
			continue
		}
		for i := range cf.Blocks {
			for _, p := range cf.Blocks[i].PluginsNamed(l.plugin) {
				addr := ":" + l.port
				if len(p.Args) > 0 {
					addr = p.Args[0]
				}
				if addr[strings.LastIndex(addr, ":")+1:] == strconv.Itoa(int(port)) {
					return l.plugin
				}
			}
		}
	}
	return ""
}

// probeFindings: a probe of the CoreDNS container that no plugin of the Corefile answers fails
// (connection refused): a failing readiness probe keeps the pod out of the Service, a failing
// liveness probe restarts it forever.
func probeFindings(s *kube.Setup, spec *corev1.PodSpec, obj string) []engine.Finding {
	cf := s.Corefile
	c := kube.CoreDNSContainer(spec)
	if cf == nil || c == nil || len(cf.Incomplete) > 0 {
		return nil
	}
	var out []engine.Finding
	for _, p := range probesOf(c) {
		if listenerOn(cf, p.port, p.path) != "" {
			continue
		}
		need := "health"
		if p.path == "/ready" {
			need = "ready"
		}
		what := "the pods never become ready, so the Service has no endpoint"
		if p.kind == "liveness" {
			what = "the kubelet restarts the container again and again"
		}
		f := engine.Finding{Code: "LA105-PROBE-NO-LISTENER", Severity: engine.SeverityFail, Object: obj,
			Message:  fmt.Sprintf("the %s probe of container %s GETs :%d%s, but no plugin of the Corefile listens there (it needs `%s`, on :%d): %s", p.kind, c.Name, p.port, p.path, need, p.port, what),
			Evidence: map[string]any{"probe": p.kind, "port": p.port, "path": p.path}}
		switch e, ok := addListener(s, cf, need, p.port); {
		case !cf.Starts():
			// an edit of a Corefile CoreDNS refuses would be refused too: LA104 says why first
			f.Remediation = remedy.Commentf("# CoreDNS refuses this Corefile (LA104), so this fix cannot be proven here: fix the Corefile, then add `%s` on :%d\n", need, p.port)
		case ok:
			f.Remediation = e.Remediation()
		}
		out = append(out, f)
	}
	return out
}

// notReadyCause says why the spec keeps the DNS pods from running or being ready, "" when it
// does not explain it.
func notReadyCause(s *kube.Setup, spec *corev1.PodSpec) string {
	var causes []string
	for _, c := range spec.Containers {
		if netBindDropped(c) {
			causes = append(causes, fmt.Sprintf("container %s drops ALL capabilities without NET_BIND_SERVICE, so /coredns cannot be executed", c.Name))
		}
	}
	if cf := s.Corefile; cf != nil {
		if c := kube.CoreDNSContainer(spec); c != nil && len(cf.Incomplete) == 0 {
			for _, p := range probesOf(c) {
				if listenerOn(cf, p.port, p.path) == "" {
					causes = append(causes, fmt.Sprintf("the %s probe GETs :%d%s, where no plugin of the Corefile listens", p.kind, p.port, p.path))
				}
			}
		}
		if !cf.Starts() {
			causes = append(causes, "CoreDNS refuses the Corefile ("+cf.Problems[0].String()+")")
		}
	}
	var pe *corefile.ParseError
	if s.CorefileErr != nil && (!errors.As(s.CorefileErr, &pe) || !pe.Unknown) {
		causes = append(causes, "CoreDNS cannot read the Corefile ("+s.CorefileErr.Error()+")")
	}
	return strings.Join(causes, "; ")
}

// rootFindings: a DNS server facing the whole LAN should not run as root. Without runAsUser or
// runAsNonRoot in the spec, the image's USER decides: the official CoreDNS images run as
// 65532 since v1.11.0 (coredns/coredns Dockerfile, "Run coredns as non root", #5969), which the
// API cannot show but the image reference can; any other image may run as root.
func rootFindings(spec *corev1.PodSpec, obj string, dep *appsv1.Deployment) []engine.Finding {
	var out []engine.Finding
	for _, c := range spec.Containers {
		nonRoot, uid := false, int64(-1)
		for _, sc := range []*corev1.SecurityContext{podLevel(spec), c.SecurityContext} {
			if sc == nil {
				continue
			}
			if sc.RunAsNonRoot != nil {
				nonRoot = *sc.RunAsNonRoot
			}
			if sc.RunAsUser != nil {
				uid = *sc.RunAsUser
			}
		}
		if (nonRoot && uid != 0) || uid > 0 {
			continue
		}
		if uid < 0 && officialNonRootImage(c.Image) {
			continue
		}
		why := "no runAsNonRoot, no non-zero runAsUser, and the image's user cannot be told from its reference"
		if uid == 0 {
			why = "runAsUser is 0"
		}
		out = append(out, engine.Finding{Code: "LA105-ROOT", Severity: engine.SeverityWarn, Object: obj,
			Message:  fmt.Sprintf("container %s may run as root (%s): a DNS server open to the whole LAN should not", c.Name, why),
			Evidence: map[string]any{"container": c.Name, "image": c.Image, "runAsNonRoot": nonRoot, "runAsUser": uid},
			Remediation: kube.ManagedNote(dep, "Deployment", "spec.template.spec.securityContext") +
				remedy.MergePatch(dep.Namespace, "deployment", dep.Name, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 65532}}}}})})
	}
	return out
}

func podLevel(spec *corev1.PodSpec) *corev1.SecurityContext {
	if spec.SecurityContext == nil {
		return nil
	}
	return &corev1.SecurityContext{RunAsNonRoot: spec.SecurityContext.RunAsNonRoot, RunAsUser: spec.SecurityContext.RunAsUser}
}

// officialNonRootImage: the CoreDNS project's image (Docker Hub coredns/coredns, its
// registry.k8s.io and k8s.gcr.io copies, k3s's rancher/mirrored-coredns-coredns mirror) at a
// tag of v1.11.0 or later.
func officialNonRootImage(image string) bool {
	name, tag, ok := strings.Cut(image, ":")
	if !ok || strings.Contains(tag, "/") {
		return false
	}
	tag, _, _ = strings.Cut(tag, "@")
	name = strings.TrimPrefix(name, "docker.io/")
	switch name {
	case "coredns/coredns", "registry.k8s.io/coredns/coredns", "k8s.gcr.io/coredns/coredns", "rancher/mirrored-coredns-coredns":
	default:
		return false
	}
	parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major > 1 || (major == 1 && minor >= 11))
}

// addListener adds `health` or `ready` (with the probe's port when it is not the plugin's
// default) to the first block of the Corefile: both listen for the whole process.
func addListener(s *kube.Setup, cf *corefile.Corefile, plugin string, port int32) (corefileEdit, bool) {
	line := plugin
	for _, l := range httpListeners {
		if l.plugin == plugin && l.port != strconv.Itoa(int(port)) {
			line = fmt.Sprintf("%s :%d", plugin, port)
		}
	}
	for i := range cf.Blocks {
		if b := &cf.Blocks[i]; b.File == "" {
			return insertInBlock(s, b, 0, line, fmt.Sprintf("add `%s` so that the probe finds a listener", line))
		}
	}
	return corefileEdit{}, false
}
