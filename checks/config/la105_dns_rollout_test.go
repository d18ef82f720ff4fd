package config

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// The healthy fixture is the seed's lan-dns with `health { lameduck 5s }`, `ready` and a
// readinessProbe on :8181/ready: each case takes one of them away, or changes the strategy or
// the securityContext, and expects exactly the named findings.
func TestLA105RolloutSafetyAndHardening(t *testing.T) {
	ptr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	seed := "apps.example.com:1053 {\n    errors\n    reload\n    template IN A {\n        answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n        answer \"{{ .Name }} 60 IN A 10.0.10.12\"\n        answer \"{{ .Name }} 60 IN A 10.0.10.13\"\n    }\n    template ANY ANY {\n        rcode NOERROR\n    }\n}\n.:1053 {\n    errors\n    reload\n    cache 30\n    forward . /etc/resolv.conf\n%s}\n"
	withHealth := func(h string) func(cm *corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) { cm.Data["Corefile"] = fmt.Sprintf(seed, h+"        ready\n") }
	}
	tests := []struct {
		name  string
		cm    func(*corev1.ConfigMap)
		dep   func(*appsv1.Deployment)
		codes []string
		text  string
	}{
		{name: "healthy: default strategy, lameduck, ready probe, the seed's securityContext"},
		{name: "no health", cm: withHealth(""), codes: []string{"LA105-NO-LAMEDUCK"}, text: "no `health` plugin"},
		{name: "health without lameduck", cm: withHealth("        health\n"), codes: []string{"LA105-NO-LAMEDUCK"}, text: "`health` without lameduck"},
		{name: "health with an address, no lameduck", cm: withHealth("        health :8080\n"), codes: []string{"LA105-NO-LAMEDUCK"}},
		{name: "lameduck longer than the grace period", dep: func(d *appsv1.Deployment) {
			g := int64(3)
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = &g
		}, codes: []string{"LA105-NO-LAMEDUCK"}, text: "terminationGracePeriodSeconds is 3"},
		{name: "no readinessProbe", dep: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].ReadinessProbe = nil },
			codes: []string{"LA105-NO-READINESS"}},
		{name: "Recreate", dep: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		},
			codes: []string{"LA105-ROLLOUT-DROPS"}, text: "Recreate"},
		{name: "maxSurge 0, maxUnavailable 1", dep: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(0)), MaxUnavailable: ptr(intstr.FromInt32(1))}}
		}, codes: []string{"LA105-ROLLOUT-DROPS"}, text: "maxSurge 0"},
		{name: "both 0 is read as maxUnavailable 1", dep: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(0)), MaxUnavailable: ptr(intstr.FromInt32(0))}}
		}, codes: []string{"LA105-ROLLOUT-DROPS"}, text: "maxUnavailable 1"},
		{name: "maxUnavailable 1 with a surge keeps one serving", dep: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromString("25%")), MaxUnavailable: ptr(intstr.FromInt32(1))}}
		}},
		{name: "maxUnavailable 100% leaves none", dep: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromString("100%"))}}
		}, codes: []string{"LA105-ROLLOUT-DROPS"}, text: "leaving no DNS"},
		{name: "an unreadable percentage", dep: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromString("lots"))}}
		}, codes: []string{"LA105-ROLLOUT-UNKNOWN"}},
		{name: "no seccompProfile", dep: func(d *appsv1.Deployment) { d.Spec.Template.Spec.SecurityContext.SeccompProfile = nil },
			codes: []string{"LA105-SECCOMP"}, text: "Unconfined unless"},
		{name: "the container's Unconfined wins over the pod's RuntimeDefault", dep: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, codes: []string{"LA105-SECCOMP"}, text: "seccompProfile Unconfined"},
		{name: "no container securityContext", dep: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].SecurityContext = nil },
			codes: []string{"LA105-PRIVILEGE-ESCALATION", "LA105-WRITABLE-ROOT"}},
		{name: "allowPrivilegeEscalation true", dep: func(d *appsv1.Deployment) {
			v := true
			d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &v
		}, codes: []string{"LA105-PRIVILEGE-ESCALATION"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configEnv(t, nil, chain(
				editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
					if tt.cm != nil {
						tt.cm(cm)
					}
				}),
				editObject("lan-dns", "lan-dns", func(d *appsv1.Deployment) {
					if tt.dep != nil {
						tt.dep(d)
					}
				}),
			))
			st, o := runConfigCheck(t, DNSDeployment(env))
			var got []string
			var msgs string
			for _, f := range o.Findings {
				if f.Severity != engine.SeverityInfo {
					got = append(got, f.Code)
					msgs += f.Message + "\n"
					if f.Code != "LA105-ROLLOUT-UNKNOWN" {
						assert.NotEmpty(t, f.Remediation, "%s has a fix", f.Code)
					}
				}
			}
			assert.ElementsMatch(t, tt.codes, got, msgs)
			if len(tt.codes) == 0 {
				assert.Equal(t, engine.StatusPass, st)
			} else {
				assert.Equal(t, engine.StatusWarn, st)
			}
			assert.Contains(t, msgs, tt.text)
		})
	}
}
