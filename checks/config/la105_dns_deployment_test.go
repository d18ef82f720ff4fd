package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestDNSDeploymentBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la105-")
}

func TestDNSDeploymentPDBPercentagesAreReadAgainstTheReplicas(t *testing.T) {
	tests := []struct {
		name string
		set  func(*policyv1.PodDisruptionBudget)
		sev  engine.Severity
	}{
		{"minAvailable 50% keeps one of two", func(p *policyv1.PodDisruptionBudget) { v := intstr.FromString("50%"); p.Spec.MinAvailable = &v }, ""},
		{"maxUnavailable 1 keeps one of two", func(p *policyv1.PodDisruptionBudget) {
			v := intstr.FromInt32(1)
			p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, &v
		}, ""},
		{"maxUnavailable 100% keeps none", func(p *policyv1.PodDisruptionBudget) {
			v := intstr.FromString("100%")
			p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, &v
		}, engine.SeverityWarn},
		{"minAvailable 100% blocks drains", func(p *policyv1.PodDisruptionBudget) { v := intstr.FromString("100%"); p.Spec.MinAvailable = &v }, engine.SeverityWarn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configEnv(t, nil, editObject("lan-dns", "lan-dns", tt.set))
			_, o := runConfigCheck(t, DNSDeployment(env))
			f := configFindings(o, engine.SeverityWarn, "PodDisruptionBudget lan-dns/lan-dns")
			if tt.sev == "" {
				assert.Empty(t, f)
				return
			}
			assert.Len(t, f, 1)
		})
	}
}

func TestDNSDeploymentClusterFirstIsInformationWhenTheCorefileForwardsToExplicitServers(t *testing.T) {
	env := configEnv(t, nil, chain(
		editObject("lan-dns", "lan-dns", func(d *appsv1.Deployment) { d.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst }),
		editObject("lan-dns", "lan-dns", func(cm *corev1.ConfigMap) {
			cm.Data["Corefile"] = "apps.example.com:1053 {\n reload\n template IN A {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n }\n template ANY ANY {\n }\n}\n.:1053 {\n reload\n forward . 192.0.2.53\n health {\n  lameduck 5s\n }\n ready\n}\n"
		}),
	))
	st, o := runConfigCheck(t, DNSDeployment(env))
	assert.Equal(t, engine.StatusPass, st)
	require.Len(t, configFindings(o, engine.SeverityInfo, "Deployment lan-dns/lan-dns"), 1)
}

// Pods with no Deployment (a DaemonSet of the hostPort form, bare pods): nothing LA105 judges
// was judged, so it WARNs saying so; it never PASSes on what it did not see.
func TestDNSDeploymentPodsWithoutADeploymentAreNotJudged(t *testing.T) {
	env := configEnv(t, nil, func(objs []runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok && d.Name == "lan-dns" {
				continue
			}
			out = append(out, o)
		}
		return out
	})
	st, o := runConfigCheck(t, DNSDeployment(env))
	assert.Equal(t, engine.StatusWarn, st)
	f := configFindings(o, engine.SeverityWarn, "Service lan-dns/lan-dns")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "not managed by a Deployment")
	assert.Contains(t, f[0].Message, "not judged")
}

func TestDNSDeploymentNotReadyPodsAreNamed(t *testing.T) {
	env := configEnv(t, nil, editObject("lan-dns", "lan-dns-7b9c6d5f4-m2n3p", func(p *corev1.Pod) {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "coredns", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError"}}}}
	}))
	st, o := runConfigCheck(t, DNSDeployment(env))
	assert.Equal(t, engine.StatusWarn, st)
	f := configFindings(o, engine.SeverityWarn, "Deployment lan-dns/lan-dns")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "1 of 2 DNS pods are not ready: lan-dns-7b9c6d5f4-m2n3p (not ready (CreateContainerError))")
}

func TestDNSDeploymentReadsCapabilityNamesAsTheRuntimesDo(t *testing.T) {
	_, o := runConfigCheck(t, DNSDeployment(corpusEnv(t, "capabilities-lowercase-add")))
	assert.NotContains(t, configCodes(o), "LA105-NET-BIND-DROPPED", "`add: [net_bind_service]` is NET_BIND_SERVICE: %+v", o.Findings)

	st, o := runConfigCheck(t, DNSDeployment(corpusEnv(t, "capabilities-lowercase-all-without-bind")))
	assert.Equal(t, engine.StatusFail, st)
	codes, messages := make([]string, 0, len(o.Findings)), make([]string, 0, len(o.Findings))
	for _, f := range o.Findings {
		codes = append(codes, f.Code)
		messages = append(messages, f.Message)
	}
	assert.Contains(t, codes, "LA105-NET-BIND-DROPPED", "`drop: [all]` is ALL")
	assert.Contains(t, strings.Join(messages, "\n"), "the spec explains it: container coredns drops ALL capabilities without NET_BIND_SERVICE")
}

func TestDNSDeploymentSaysWhenAProbeReachesNoPlugin(t *testing.T) {
	st, o := runConfigCheck(t, DNSDeployment(corpusEnv(t, "k8s-addon-coredns-base-seed-corefile")))
	assert.Equal(t, engine.StatusFail, st)
	fails := configFindings(o, engine.SeverityFail, "")
	msgs := make([]string, 0, len(fails))
	for _, f := range fails {
		msgs = append(msgs, f.Code+": "+f.Message)
	}
	all := strings.Join(msgs, "\n")
	assert.Contains(t, all, "LA105-PROBE-NO-LISTENER: the liveness probe of container coredns GETs :8080/health")
	assert.Contains(t, all, "LA105-PROBE-NO-LISTENER: the readiness probe of container coredns GETs :8181/ready")
	assert.Contains(t, all, "the spec explains it")
}

func TestDNSDeploymentKnowsTheOfficialImageRunsAs65532(t *testing.T) {
	_, o := runConfigCheck(t, DNSDeployment(corpusEnv(t, "k8s-addon-coredns-base-as-lan-dns")))
	for _, f := range o.Findings {
		assert.NotEqual(t, "LA105-ROOT", f.Code, "registry.k8s.io/coredns/coredns:v1.14.2 runs as 65532 (its Dockerfile): %s", f.Message)
	}
	assert.True(t, officialNonRootImage("registry.k8s.io/coredns/coredns:v1.11.1"))
	assert.True(t, officialNonRootImage("docker.io/coredns/coredns:1.12.0"))
	assert.False(t, officialNonRootImage("registry.k8s.io/coredns/coredns:v1.10.1"), "root before v1.11.0")
	assert.False(t, officialNonRootImage("registry.example.com/coredns/coredns:1.12.0"))
	assert.False(t, officialNonRootImage("coredns/coredns@sha256:0123"))
}

func configCodes(o engine.Outcome) []string {
	out := make([]string, 0, len(o.Findings))
	for _, f := range o.Findings {
		out = append(out, f.Code)
	}
	return out
}
