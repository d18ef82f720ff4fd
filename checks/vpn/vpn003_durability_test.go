package vpn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func enableForwardInit(privileged bool) func(*corev1.Pod, *Options) {
	return func(p *corev1.Pod, _ *Options) {
		p.Spec.InitContainers = []corev1.Container{{Name: "sysctl", Image: "busybox:1.36",
			Command:         []string{"sysctl", "-w", "net.ipv4.ip_forward=1"},
			SecurityContext: &corev1.SecurityContext{Privileged: new(privileged)}}}
	}
}

func TestAOneTheManifestDoesNotExplainIsAHandFixWarning(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, nil)
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	require.Len(t, fs, 1)
	assert.Equal(t, "VPN003-HAND-FIX", fs[0].Code)
	assert.Contains(t, fs[0].Message, "nothing in Deployment vpn/openvpn's manifest sets it and a new pod starts with 0 (Calico's CNI plugin writes 0")
	assert.Contains(t, fs[0].Message, "a hand fix (kubectl exec ... sysctl -w); it lasts as long as this pod's sandbox (its network namespace): a container restart keeps it, a new pod")
	assert.Contains(t, fs[0].Remediation, "kubectl -n vpn patch deployment openvpn --patch-file enable-ip-forward.yaml")
	assert.Contains(t, fs[0].Remediation, "- net.ipv4.ip_forward=1")
	assert.Contains(t, fs[0].Evidence["why"], "kubelet allowlist is unknown")
}

func TestAPrivilegedInitContainerMakesItDurable(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, enableForwardInit(true))
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, `initContainer sysctl runs "sysctl -w net.ipv4.ip_forward=1" (privileged)`)
}

func TestPodSysctlsMakeItDurable(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, func(p *corev1.Pod, _ *Options) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}}
	})
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "securityContext.sysctls")
}

func TestAnUnprivilegedInitContainerCannotWriteTheSysctl(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, enableForwardInit(false))
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	assert.Contains(t, messages(fs), "initContainer sysctl writes ip_forward but is not privileged")
}

func TestZeroWithNothingInTheManifestFails(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusFail, st, messages(fs))
	assert.Contains(t, fs[0].Message, "ip_forward = 0 and nothing in Deployment vpn/openvpn's manifest sets it")
}

func TestAScriptFromAConfigMapRunByAPrivilegedContainerCounts(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-scripts"},
		Data: map[string]string{"start.sh": "#!/bin/sh\necho 1 > /proc/sys/net/ipv4/ip_forward\nexec openvpn --config /etc/openvpn/openvpn.conf\n"}}
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, func(p *corev1.Pod, _ *Options) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scripts", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "openvpn-scripts"}}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scripts", MountPath: "/scripts"}}
		p.Spec.Containers[0].SecurityContext.Privileged = new(true)
	}, cm)
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "a script mounted from volume scripts into privileged container openvpn")
}

func TestAnAllowlistingKubeletChoosesTheSysctlsFix(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	f.env.Configz = func(_ context.Context, node string) ([]byte, error) {
		require.Equal(t, "node-1", node)
		return []byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.*"],"maxPods":110}}`), nil
	}
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusFail, st)
	assert.Contains(t, fs[0].Remediation, "sysctls:\n        - name: net.ipv4.ip_forward\n          value: \"1\"")
	assert.NotContains(t, fs[0].Remediation, "privileged")
	assert.Equal(t, variantSysctls, fs[0].Evidence["fixVariant"])
}

func TestAKubeletWithoutTheSysctlInItsAllowlistChoosesTheInitContainer(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	f.env.Configz = func(context.Context, string) ([]byte, error) {
		return []byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["kernel.msg*"]}}`), nil
	}
	_, _, fs := f.run(t, VPNDurability(f.env))
	assert.Equal(t, variantInitContainer, fs[0].Evidence["fixVariant"])
	assert.Contains(t, fs[0].Evidence["why"], "does not allowlist net.ipv4.ip_forward")
}

func TestSysctlForbiddenEventsAndARestrictedNamespaceAreSaid(t *testing.T) {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-old.17f"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "openvpn-7d9f8-old"}, Reason: "SysctlForbidden",
		Message: "forbidden sysctl: \"net.ipv4.ip_forward\" not allowlisted"}
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil, ev)
	ns, err := f.client.CoreV1().Namespaces().Get(t.Context(), "vpn", metav1.GetOptions{})
	require.NoError(t, err)
	ns.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	_, err = f.client.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.env.Configz = func(context.Context, string) ([]byte, error) {
		return []byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.ip_forward"]}}`), nil
	}
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusFail, st)
	all := messages(fs)
	assert.Contains(t, all, "the kubelet refused a sysctl in this namespace: Pod openvpn-7d9f8-old")
	last := byCode(t, fs, "VPN003-OFF-NOT-IN-MANIFEST")
	assert.Equal(t, variantInitContainer, last.Evidence["fixVariant"], "the events overrule the allowlist")
	assert.Contains(t, last.Evidence["why"], `enforces Pod Security "baseline"`)
	assert.Contains(t, last.Evidence["why"], "pod-security.kubernetes.io/enforce=privileged")
}

func TestAChartInstallPointsAtItsSwitch(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, func(p *corev1.Pod, _ *Options) {
		p.Labels["helm.sh/chart"] = "openvpn-4.2.5"
	})
	_, _, fs := f.run(t, VPNDurability(f.env))
	assert.Contains(t, fs[0].Remediation, "installed by the chart openvpn-4.2.5")
	assert.Contains(t, fs[0].Remediation, "ipForwardInitContainer: true")
}

func TestTheChartSwitchInAnnotationsExplainsTheOne(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, func(p *corev1.Pod, _ *Options) {
		p.Annotations = map[string]string{"openvpn.chart/ipForwardInitContainer": "true"}
	})
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "the chart switch openvpn.chart/ipForwardInitContainer=true")
}

// The fix round-trips: the patch VPN003 prints, applied to the Deployment (by the API
// machinery's own strategic merge), gives a pod template whose next replica the check passes.
func TestTheForwardingFixAppliedToTheDeploymentMakesTheNextReplicaDurable(t *testing.T) {
	for name, configz := range map[string]string{
		"initContainer": `{"kubeletconfig":{}}`,
		"sysctls":       `{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.ip_forward"]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
			f.env.Configz = func(context.Context, string) ([]byte, error) { return []byte(configz), nil }
			st, _, fs := f.run(t, VPNDurability(f.env))
			require.Equal(t, engine.StatusFail, st, messages(fs))
			applyFix(t, f, byCode(t, fs, "VPN003-OFF-NOT-IN-MANIFEST").Remediation)

			next := newVPNFixture(t, vpnScenario{forwarding: "1"}, podFromTemplate(t, f.client))
			st, _, fs = next.run(t, VPNDurability(next.env))
			require.Equal(t, engine.StatusPass, st, messages(fs))
			assert.Equal(t, "VPN003-SET-BY-MANIFEST", fs[0].Code, messages(fs))
		})
	}
}

// With --prove-fixes the API server's dry-run answers choose the variant, and its words say why.
func TestTheAPIServersDryRunChoosesTheVariant(t *testing.T) {
	owner := facts.Workload{Kind: "Deployment", Namespace: "vpn", Name: "openvpn"}
	refused := func(msg string) facts.Admission { return facts.Admission{Refusal: msg} }
	admitted := facts.Admission{Admitted: true}
	tests := []struct {
		name    string
		d       facts.Durability
		variant string
		says    []string
	}{
		{"not proven: the label is read, and said to be", facts.Durability{PodSecurity: "baseline", NotProven: "not proven by the API server: --prove-fixes ..."},
			variantInitContainer, []string{"read from the namespace label", "--prove-fixes"}},
		{"the allowlisted sysctl is refused, the initContainer admitted", facts.Durability{Allowlist: []string{"net.ipv4.ip_forward"},
			Admissions: map[string]facts.Admission{variantSysctls: refused("a ValidatingAdmissionPolicy denies sysctls"), variantInitContainer: admitted}},
			variantInitContainer, []string{"a ValidatingAdmissionPolicy denies sysctls", "admits one with initContainer"}},
		{"an initContainer admitted", facts.Durability{Admissions: map[string]facts.Admission{variantSysctls: admitted, variantInitContainer: admitted}},
			variantInitContainer, []string{"the API server admits a pod carrying it"}},
		{"both refused by Pod Security", facts.Durability{PodSecurity: "baseline", Admissions: map[string]facts.Admission{
			variantSysctls: refused(`violates PodSecurity "baseline:latest": forbidden sysctls`), variantInitContainer: refused(`violates PodSecurity "baseline:latest": privileged`)}},
			variantInitContainer, []string{`dry-run: violates PodSecurity "baseline:latest": privileged`, "forbidden sysctls", "enforce=privileged"}},
		{"the sysctl admitted but not allowlisted stays refused", facts.Durability{Allowlist: []string{},
			Admissions: map[string]facts.Admission{variantSysctls: admitted, variantInitContainer: refused("webhook says no")}},
			variantInitContainer, []string{"webhook says no", "does not allowlist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, why := chooseVariant(tt.d, owner, "node-vpn")
			assert.Equal(t, tt.variant, v)
			for _, s := range tt.says {
				assert.Contains(t, why, s)
			}
		})
	}
}
