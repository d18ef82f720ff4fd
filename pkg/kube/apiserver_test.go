package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServerPod is kubeadm's static pod as the kubelet mirrors it (kubernetes
// cmd/kubeadm/app/phases/controlplane/manifests.go: command kube-apiserver with --flag=value).
func apiServerPod(node string, flags ...string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-apiserver-" + node, Labels: map[string]string{"component": "kube-apiserver", "tier": "control-plane"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver", Command: append([]string{"kube-apiserver", "--advertise-address=10.0.10.10"}, flags...)}}},
	}
}

func TestAPIServerFlagsTellWhetherDenyServiceExternalIPsIsOn(t *testing.T) {
	f := readAPIServerFlags([]corev1.Pod{apiServerPod("cp-1", "--enable-admission-plugins=NodeRestriction,DenyServiceExternalIPs")})
	on, known := f.PluginOn("DenyServiceExternalIPs")
	assert.True(t, known)
	assert.True(t, on)
	assert.Equal(t, "Pod kube-system/kube-apiserver-cp-1", f.Source())

	// kubeadm's default: NodeRestriction only; the plugin is off by default.
	f = readAPIServerFlags([]corev1.Pod{apiServerPod("cp-1", "--enable-admission-plugins=NodeRestriction")})
	on, known = f.PluginOn("DenyServiceExternalIPs")
	assert.True(t, known)
	assert.False(t, on)

	// pflag's other forms: "--flag value", repeated flags, the deprecated --admission-control.
	f = readAPIServerFlags([]corev1.Pod{apiServerPod("cp-1", "--enable-admission-plugins", "NodeRestriction", "--enable-admission-plugins=DenyServiceExternalIPs")})
	on, _ = f.PluginOn("DenyServiceExternalIPs")
	assert.True(t, on)
	f = readAPIServerFlags([]corev1.Pod{apiServerPod("cp-1", "--admission-control=DenyServiceExternalIPs,NamespaceLifecycle")})
	on, _ = f.PluginOn("DenyServiceExternalIPs")
	assert.True(t, on)
}

func TestAPIServerFlagsThatDifferBetweenPodsAreUnknown(t *testing.T) {
	f := readAPIServerFlags([]corev1.Pod{
		apiServerPod("cp-1", "--enable-admission-plugins=NodeRestriction,DenyServiceExternalIPs"),
		apiServerPod("cp-2", "--enable-admission-plugins=NodeRestriction"),
	})
	_, known := f.PluginOn("DenyServiceExternalIPs")
	assert.False(t, known)
	assert.Equal(t, []string{"Pod kube-system/kube-apiserver-cp-2"}, f.Disagree)
}

func TestAPIServerFlagsWithoutAPodAreNotSeen(t *testing.T) {
	f := readAPIServerFlags(nil)
	_, known := f.PluginOn("DenyServiceExternalIPs")
	assert.False(t, known)
	assert.Contains(t, f.Why, "k3s and managed control planes show none")
}

func TestCommandFlagsReadPflagsFormsAndTakeAValueOnce(t *testing.T) {
	type flag struct{ name, value string }
	var got []flag
	for name, value := range commandFlags([]string{"kube-apiserver", "--a=1", "--b", "2", "positional", "--c", "--d", "-x", "--e"}) {
		got = append(got, flag{name, value})
	}
	assert.Equal(t, []flag{{"a", "1"}, {"b", "2"}, {"c", ""}, {"d", ""}, {"e", ""}}, got,
		"a value is taken once (not read again as an argument); a flag followed by a flag has none")
}
