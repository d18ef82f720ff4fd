package config

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// The seed's three hardening settings of a DNS server open to the whole LAN, each judged as
// Pod Security's Restricted profile reads it (kubernetes/pod-security-admission policy):
//   - seccompProfile RuntimeDefault or Localhost, on the pod or the container, the container's
//     winning (check_seccompProfile_restricted.go); unset, the kubelet runs the container
//     Unconfined unless it runs with --seccomp-default;
//   - allowPrivilegeEscalation false on the container (check_allowPrivilegeEscalation.go);
//     unset, the runtime lets a setuid binary or file capability raise privileges;
//   - readOnlyRootFilesystem true (not in Restricted; the seed sets it: CoreDNS writes nothing).

// hardeningFindings: one finding per missing setting of each container.
func hardeningFindings(spec *corev1.PodSpec, obj string, dep *appsv1.Deployment) []engine.Finding {
	var out []engine.Finding
	podSeccomp := ""
	if spec.SecurityContext != nil && spec.SecurityContext.SeccompProfile != nil {
		podSeccomp = string(spec.SecurityContext.SeccompProfile.Type)
	}
	for i, c := range spec.Containers {
		sc := c.SecurityContext
		base := fmt.Sprintf("/spec/template/spec/containers/%d/securityContext", i)
		seccomp := podSeccomp
		if sc != nil && sc.SeccompProfile != nil {
			seccomp = string(sc.SeccompProfile.Type)
		}
		if seccomp != string(corev1.SeccompProfileTypeRuntimeDefault) && seccomp != string(corev1.SeccompProfileTypeLocalhost) {
			why := "no seccompProfile: the kubelet runs it Unconfined unless it runs with --seccomp-default"
			if seccomp != "" {
				why = "seccompProfile " + seccomp
			}
			var op remedy.PatchOp
			switch {
			case sc != nil && sc.SeccompProfile != nil:
				// the container's own profile wins over the pod's: it is the one to change
				op = remedy.PatchOp{Op: "add", Path: base + "/seccompProfile", Value: map[string]any{"type": "RuntimeDefault"}}
			case spec.SecurityContext == nil:
				op = remedy.PatchOp{Op: "add", Path: "/spec/template/spec/securityContext", Value: map[string]any{"seccompProfile": map[string]any{"type": "RuntimeDefault"}}}
			default:
				op = remedy.PatchOp{Op: "add", Path: "/spec/template/spec/securityContext/seccompProfile", Value: map[string]any{"type": "RuntimeDefault"}}
			}
			out = append(out, hardeningFinding(dep, obj, "LA105-SECCOMP", c.Name,
				fmt.Sprintf("container %s runs without a seccomp filter (%s): the seed sets seccompProfile RuntimeDefault for a DNS server open to the LAN", c.Name, why),
				map[string]any{"seccompProfile": seccomp}, op))
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, hardeningFinding(dep, obj, "LA105-PRIVILEGE-ESCALATION", c.Name,
				fmt.Sprintf("container %s does not set allowPrivilegeEscalation: false: a setuid binary or file capability in the image can raise its privileges", c.Name),
				map[string]any{"allowPrivilegeEscalation": boolText(sc, func(s *corev1.SecurityContext) *bool { return s.AllowPrivilegeEscalation })},
				securityContextOp(sc, base, "allowPrivilegeEscalation", false)))
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			out = append(out, hardeningFinding(dep, obj, "LA105-WRITABLE-ROOT", c.Name,
				fmt.Sprintf("container %s has a writable root filesystem: CoreDNS writes nothing, and the seed sets readOnlyRootFilesystem: true", c.Name),
				map[string]any{"readOnlyRootFilesystem": boolText(sc, func(s *corev1.SecurityContext) *bool { return s.ReadOnlyRootFilesystem })},
				securityContextOp(sc, base, "readOnlyRootFilesystem", true)))
		}
	}
	return out
}

// securityContextOp sets one field of a container's securityContext. A container without one
// gets the whole context with both settings: a JSON patch cannot add below a missing member,
// and the two findings' patches must not undo each other when both are applied.
func securityContextOp(sc *corev1.SecurityContext, base, field string, v bool) remedy.PatchOp {
	if sc == nil {
		return remedy.PatchOp{Op: "add", Path: base, Value: map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true}}
	}
	return remedy.PatchOp{Op: "add", Path: base + "/" + field, Value: v}
}

func boolText(sc *corev1.SecurityContext, get func(*corev1.SecurityContext) *bool) string {
	if sc == nil || get(sc) == nil {
		return "unset"
	}
	return strconv.FormatBool(*get(sc))
}

func hardeningFinding(dep *appsv1.Deployment, obj, code, container, msg string, ev map[string]any, op remedy.PatchOp) engine.Finding {
	ev["container"] = container
	return engine.Finding{Code: code, Severity: engine.SeverityWarn, Object: obj, Message: msg, Evidence: ev,
		Remediation: kube.ManagedNote(dep, "Deployment", "spec.template.spec") + remedy.JSONPatch(dep.Namespace, "deployment", dep.Name, op)}
}
