package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func proxyDaemonSet(c corev1.Container, vols ...corev1.Volume) appsv1.DaemonSet {
	return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: vols}}}}
}

func TestProxyModeFlagsAreReadInEveryWayTheyAreWritten(t *testing.T) {
	cases := []struct {
		name    string
		c       corev1.Container
		mode    string
		newWord string
	}{
		{"--proxy-mode=ipvs in args", corev1.Container{Command: []string{"kube-proxy"}, Args: []string{"--v=2", "--proxy-mode=ipvs"}}, "ipvs", "--proxy-mode=iptables"},
		{"--proxy-mode ipvs as two words", corev1.Container{Command: []string{"/usr/local/bin/kube-proxy", "--proxy-mode", "ipvs"}}, "ipvs", "iptables"},
		{"inside an sh -c script", corev1.Container{Command: []string{"/bin/sh", "-c", "exec kube-proxy --proxy-mode ipvs --v=2"}}, "ipvs", "exec kube-proxy --proxy-mode iptables --v=2"},
		{"nftables", corev1.Container{Image: "registry.k8s.io/kube-proxy:v1.37.2", Args: []string{"--proxy-mode=nftables"}}, "nftables", "--proxy-mode=iptables"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := daemonSetSource(proxyDaemonSet(tc.c), nil)
			require.Empty(t, src.Unknown)
			assert.Equal(t, tc.mode, src.Mode)
			require.NotNil(t, src.Flag)
			assert.Equal(t, tc.newWord, src.Flag.WordFor(ModeIPTables))
		})
	}
}

func TestNoModeAnywhereIsKubeProxysDefaultIptables(t *testing.T) {
	src := daemonSetSource(proxyDaemonSet(corev1.Container{Command: []string{"kube-proxy", "--v=2"}}), nil)
	assert.Equal(t, "", src.Mode)
	assert.Equal(t, ModeIPTables, src.EffectiveMode())
	assert.Contains(t, src.ModeFrom, "kube-proxy's default, iptables")
}

func TestAConfigFileOutsideAConfigMapIsUnknownNotIptables(t *testing.T) {
	c := corev1.Container{Command: []string{"kube-proxy", "--config=/etc/kube-proxy/config.yaml"}}
	src := daemonSetSource(proxyDaemonSet(c), nil)
	assert.Contains(t, src.Unknown, "not a file of a ConfigMap volume")
}

func TestTheConfigFileWinsOverTheFlag(t *testing.T) {
	// cmd/kube-proxy/app/options.go: with --config, the file replaces the flag-built configuration.
	c := corev1.Container{Command: []string{"kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--proxy-mode=iptables"},
		VolumeMounts: []corev1.VolumeMount{{Name: "kube-proxy", MountPath: "/var/lib/kube-proxy"}}}
	vol := corev1.Volume{Name: "kube-proxy", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-proxy"}}}}
	cms := map[string]corev1.ConfigMap{"kube-proxy": {Data: map[string]string{"config.conf": "kind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n  strictARP: true\n"}}}
	src := daemonSetSource(proxyDaemonSet(c, vol), cms)
	assert.Equal(t, ModeIPVS, src.Mode)
	require.NotNil(t, src.StrictARP)
	assert.True(t, *src.StrictARP)
	assert.Equal(t, "kube-system/kube-proxy", src.ConfigMap)
	assert.Equal(t, "config.conf", src.Key)
}

func TestStaticPodsAndK3sNodesAreSources(t *testing.T) {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-node-1"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Command: []string{"kube-proxy", "--proxy-mode=ipvs"}}}}}
	src, ok := staticPodSource(p)
	require.True(t, ok)
	assert.Equal(t, []string{"node-1"}, src.Nodes)
	assert.Equal(t, ModeIPVS, src.Mode)

	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "k3s-1", Annotations: map[string]string{"k3s.io/node-args": `["server","--disable-kube-proxy"]`}}}
	src, ok = k3sSource(n)
	require.True(t, ok)
	assert.True(t, src.Disabled)
	n.Annotations["k3s.io/node-args"] = `not json`
	src, _ = k3sSource(n)
	assert.Contains(t, src.Unknown, "does not parse")
}

func TestCiliumServesExternalIPsAsNewKPRConfigSays(t *testing.T) {
	assert.True(t, CiliumConfig{KubeProxyReplacement: "true"}.ServesExternalIPs())
	assert.True(t, CiliumConfig{KubeProxyReplacement: "strict"}.ServesExternalIPs(), "pre-1.14 spelling")
	assert.False(t, CiliumConfig{KubeProxyReplacement: "false", EnableExternalIPs: "true"}.ServesExternalIPs(), "externalIPs need the node port feature")
	assert.True(t, CiliumConfig{KubeProxyReplacement: "partial", EnableExternalIPs: "true", EnableNodePort: "true"}.ServesExternalIPs())
	assert.False(t, CiliumConfig{KubeProxyReplacement: "partial"}.ReplacesKubeProxy())
}

func TestSetKubeProxyModeKeepsTheRestOfTheFile(t *testing.T) {
	out, err := SetKubeProxyMode("kind: KubeProxyConfiguration\nmode: ipvs\nclusterCIDR: 10.244.0.0/16\n", ModeIPTables)
	require.NoError(t, err)
	mode, _, err := ParseKubeProxyConfig(out)
	require.NoError(t, err)
	assert.Equal(t, ModeIPTables, mode)
	assert.Contains(t, out, "clusterCIDR: 10.244.0.0/16")
}
