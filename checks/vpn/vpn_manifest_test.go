package vpn

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
)

// The fixes are meant to be pasted: they must be valid patches that set what they say.
func TestEveryFixIsAPatchKubernetesCanRead(t *testing.T) {
	dep := facts.Workload{Kind: "Deployment", Name: "openvpn", Namespace: "vpn"}
	cases := map[string]struct {
		yaml  string
		check func(t *testing.T, spec corev1.PodSpec)
	}{
		"initContainer": {forwardingFixYAML(dep, variantInitContainer), func(t *testing.T, s corev1.PodSpec) {
			t.Helper()
			require.Len(t, s.InitContainers, 1)
			c := s.InitContainers[0]
			assert.Equal(t, []string{"sysctl", "-w", "net.ipv4.ip_forward=1"}, c.Command)
			assert.True(t, *c.SecurityContext.Privileged)
		}},
		"sysctls": {forwardingFixYAML(dep, variantSysctls), func(t *testing.T, s corev1.PodSpec) {
			t.Helper()
			assert.Equal(t, []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}, s.SecurityContext.Sysctls)
			assert.Empty(t, s.InitContainers)
		}},
		"masquerade": {masqueradeFixYAML(dep, "kylemanna/openvpn:2.4", netip.MustParsePrefix("10.8.0.0/24"), "eth0"), func(t *testing.T, s corev1.PodSpec) {
			t.Helper()
			require.Len(t, s.InitContainers, 1)
			c := s.InitContainers[0]
			assert.Equal(t, "kylemanna/openvpn:2.4", c.Image)
			assert.Equal(t, "iptables -t nat -A POSTROUTING -s 10.8.0.0/24 -o eth0 -j MASQUERADE", strings.Join(c.Command, " "))
			assert.Equal(t, []corev1.Capability{"NET_ADMIN"}, c.SecurityContext.Capabilities.Add)
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.True(t, strings.HasPrefix(c.yaml, "# "), "the first line says how to apply it")
			var d appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(c.yaml), &d), c.yaml)
			c.check(t, d.Spec.Template.Spec)
		})
	}
}

func TestABarePodGetsThePodSpecToRecreateItWith(t *testing.T) {
	y := forwardingFixYAML(facts.Workload{Name: "openvpn", Namespace: "vpn"}, variantInitContainer)
	assert.Contains(t, y, "Pod vpn/openvpn has no controller")
	var p corev1.Pod
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), &p))
	assert.Len(t, p.Spec.InitContainers, 1)
}
