package facts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two manifest fixes for a durable ip_forward=1, as pod-spec fragments: the vpn checks
// print them as patches of the owner's template, and --prove-fixes asks the API server whether
// a pod carrying each would be admitted.
const (
	VariantInitContainer = "initContainer"
	VariantSysctls       = "securityContext.sysctls"
)

// ForwardInitContainer is the initContainer variant: a privileged busybox writing the sysctl
// into the pod's network namespace before the VPN container starts.
func ForwardInitContainer() corev1.Container {
	return corev1.Container{
		Name:            "enable-ip-forward",
		Image:           "busybox:1.36.1",
		Command:         []string{"sysctl", "-w", "net.ipv4.ip_forward=1"},
		SecurityContext: &corev1.SecurityContext{Privileged: new(true)},
	}
}

// ForwardSysctl is the securityContext.sysctls variant's entry.
func ForwardSysctl() corev1.Sysctl { return corev1.Sysctl{Name: "net.ipv4.ip_forward", Value: "1"} }

// WithForwardFix is spec with the variant's fragment merged as the printed strategic-merge
// patch merges it (initContainers and sysctls are merged by name).
func WithForwardFix(spec corev1.PodSpec, variant string) corev1.PodSpec {
	out := *spec.DeepCopy()
	switch variant {
	case VariantSysctls:
		if out.SecurityContext == nil {
			out.SecurityContext = &corev1.PodSecurityContext{}
		}
		s := ForwardSysctl()
		kept := out.SecurityContext.Sysctls[:0]
		for _, x := range out.SecurityContext.Sysctls {
			if x.Name != s.Name {
				kept = append(kept, x)
			}
		}
		out.SecurityContext.Sysctls = append(kept, s)
	default:
		c := ForwardInitContainer()
		kept := out.InitContainers[:0]
		for _, x := range out.InitContainers {
			if x.Name != c.Name {
				kept = append(kept, x)
			}
		}
		out.InitContainers = append([]corev1.Container{c}, kept...)
	}
	return out
}

// Admission is what the API server said of a pod carrying one fix variant, created with
// dryRun=All: it runs validation, Pod Security, ValidatingAdmissionPolicies and webhooks, and
// stores nothing.
type Admission struct {
	Admitted bool
	// Refusal is the API server's message when it refused the pod.
	Refusal string
}

// maxAdmissionText bounds a refusal kept from the API server (hostile text: it
// may come from a webhook).
const maxAdmissionText = 2048

// proveFixes dry-runs a pod carrying each variant in the pod's namespace. notProven says why it
// was not done ("" when it was).
func (g *Gatherer) proveFixes(ctx context.Context, m *podMemos) (map[string]Admission, string) {
	if !g.opts.ProveFixes {
		return nil, "not proven by the API server: --prove-fixes creates each fixed pod with dryRun=All (nothing is stored); it needs create on pods in " + m.ref.Namespace
	}
	cs := g.seams.Client
	ns := m.ref.Namespace
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "create", Resource: "pods"}}}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return nil, "not proven by the API server: asking whether this identity may create pods in " + ns + " failed: " + err.Error()
	case !review.Status.Allowed:
		return nil, "not proven by the API server: this identity may not create pods in " + ns + " (a dry-run needs it: `kubectl lanaccess manifests rbac-vpn-dryrun`; RBAC cannot grant dry-run alone)"
	}
	out := map[string]Admission{}
	for _, v := range []string{VariantInitContainer, VariantSysctls} {
		a, err := g.dryRunPod(ctx, m, v)
		if err != nil {
			return out, "not proven by the API server: " + err.Error()
		}
		out[v] = a
	}
	return out, ""
}

// dryRunPod creates, with dryRun=All, a pod of the VPN pod's spec carrying the variant. The
// spec is the running pod's without what the API server and the kubelet filled in for that
// pod (its node, its service account token volume), so that admission judges it as new.
func (g *Gatherer) dryRunPod(ctx context.Context, m *podMemos, variant string) (Admission, error) {
	spec := WithForwardFix(m.pod.Spec, variant)
	spec.NodeName = ""
	spec.Volumes = withoutTokenVolumes(spec.Volumes)
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = withoutTokenMounts(spec.Containers[i].VolumeMounts, m.pod.Spec.Volumes)
	}
	for i := range spec.InitContainers {
		spec.InitContainers[i].VolumeMounts = withoutTokenMounts(spec.InitContainers[i].VolumeMounts, m.pod.Spec.Volumes)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lanaccess-dryrun-", Namespace: m.ref.Namespace, Labels: m.pod.Labels},
		Spec:       spec,
	}
	// The API server's warnings (a Pod Security warn level) reach the run's warning
	// collector, which the report shows.
	_, err := g.seams.Client.CoreV1().Pods(m.ref.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var st apierrors.APIStatus
	switch {
	case err == nil:
		return Admission{Admitted: true}, nil
	case errors.As(err, &st) && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)):
		// admission or validation refused it: the answer, not a failure to ask
		return Admission{Refusal: bound(st.Status().Message)}, nil
	default:
		return Admission{}, fmt.Errorf("the dry-run of the %s variant failed: %w", variant, err)
	}
}

func bound(s string) string {
	if len(s) > maxAdmissionText {
		return strings.ToValidUTF8(s[:maxAdmissionText], "") + "..."
	}
	return s
}

// tokenVolume reports the projected service account token volume the API server adds to a new
// pod (kube-api-access-*): it is added again on create.
func tokenVolume(v corev1.Volume) bool {
	return strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil
}

func withoutTokenVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		if !tokenVolume(v) {
			out = append(out, v)
		}
	}
	return out
}

func withoutTokenMounts(ms []corev1.VolumeMount, vs []corev1.Volume) []corev1.VolumeMount {
	token := map[string]bool{}
	for _, v := range vs {
		if tokenVolume(v) {
			token[v.Name] = true
		}
	}
	var out []corev1.VolumeMount
	for _, m := range ms {
		if !token[m.Name] {
			out = append(out, m)
		}
	}
	return out
}
