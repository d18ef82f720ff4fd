package vpn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func enableForwardInit(privileged bool) func(*corev1.Pod, *Options) {
	return func(p *corev1.Pod, _ *Options) {
		p.Spec.InitContainers = []corev1.Container{{Name: "sysctl", Image: "busybox:1.36",
			Command:         []string{"sysctl", "-w", "net.ipv4.ip_forward=1"},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(privileged)}}}
	}
}

func TestAOneTheManifestDoesNotExplainIsAHandFixWarning(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "1"}, nil)
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusWarn, st, messages(fs))
	require.Len(t, fs, 1)
	assert.Contains(t, fs[0].Message, "nothing in Deployment vpn/openvpn's manifest sets it: a hand fix")
	assert.Contains(t, fs[0].Remediation, "kubectl -n vpn patch deployment openvpn --patch-file enable-ip-forward.yaml")
	assert.Contains(t, fs[0].Remediation, `command: ["sysctl", "-w", "net.ipv4.ip_forward=1"]`)
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
		p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	}, cm)
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "a script mounted from volume scripts into privileged container openvpn")
}

func TestAnAllowlistingKubeletChoosesTheSysctlsFix(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{forwarding: "0"}, nil)
	f.trace.configz = func(_ context.Context, node string) ([]byte, error) {
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
	f.trace.configz = func(context.Context, string) ([]byte, error) {
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
	f.trace.configz = func(context.Context, string) ([]byte, error) {
		return []byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.ip_forward"]}}`), nil
	}
	st, _, fs := f.run(t, VPNDurability(f.env))
	require.Equal(t, engine.StatusFail, st)
	all := messages(fs)
	assert.Contains(t, all, "the kubelet refused a sysctl in this namespace: Pod openvpn-7d9f8-old")
	last := fs[len(fs)-1]
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

func TestTheKubeletConfigurationIsReadThroughTheNodeProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/nodes/node-1/proxy/configz":
		case "/api/v1/nodes/node-3/proxy/configz":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"nodes \"node-3\" is forbidden: User \"viewer\" cannot get resource \"nodes/proxy\""}`))
			return
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write([]byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.ip_forward"]}}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	tr := &vpnTrace{env: &Env{Client: cs}, configz: restConfigz(cs)}
	list, err := tr.kubeletAllowlist(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, []string{"net.ipv4.ip_forward"}, list)
	_, err = tr.kubeletAllowlist(t.Context(), "node-2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the kubelet of node node-2 does not serve /configz")
	_, err = tr.kubeletAllowlist(t.Context(), "node-3")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs get on nodes/proxy")
}
