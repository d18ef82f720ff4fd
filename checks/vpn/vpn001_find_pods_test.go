package vpn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func TestOpenVPNPodsAreFoundByImageInEveryNamespace(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, nil)
	st, _, fs := f.run(t, VPNFindPods(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	require.Len(t, fs, 1, "nginx-0 is not a VPN pod")
	assert.Equal(t, "Pod "+vpnPodRef, fs[0].Object)
	assert.Contains(t, fs[0].Message, "container openvpn on node node-1, pod IP 10.244.1.5")
	assert.Equal(t, "kylemanna/openvpn:2.4", fs[0].Evidence["image"])
}

func TestASelectorTracesThePodsItNamesWhateverTheirImage(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, func(pod *corev1.Pod, o *Options) {
		pod.Spec.Containers[0].Image = "registry.local/vpn/server:7"
		pod.Spec.Containers[0].Name = "server"
		pod.Status.ContainerStatuses[0].Name = "server"
		o.Selector, o.Namespace = labels.SelectorFromSet(labels.Set{"app": "openvpn"}), "vpn"
	})
	st, _, fs := f.run(t, VPNFindPods(f.env))
	require.Equal(t, engine.StatusPass, st, messages(fs))
	assert.Contains(t, fs[0].Message, "container server")
	assert.Contains(t, fs[0].Message, "selector app=openvpn in namespace vpn")
}

func TestAReplicaThatIsNotRunningIsNamedAsNotTraced(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-7d9f8-zz9"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "openvpn", Image: "kylemanna/openvpn:2.4"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "openvpn",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}}}}}
	f := newVPNFixture(t, vpnScenario{}, nil, pending)
	st, _, fs := f.run(t, VPNFindPods(f.env))
	assert.Equal(t, engine.StatusWarn, st)
	assert.Contains(t, messages(fs), "warn Pod vpn/openvpn-7d9f8-zz9: not traced: the pod is Pending (openvpn: CreateContainerConfigError)")
}

func TestNoVPNPodIsAUsageErrorNamingTheSelectorFlag(t *testing.T) {
	f := newVPNFixture(t, vpnScenario{}, func(_ *corev1.Pod, o *Options) { o.Namespace = "elsewhere" })
	st, reason, _ := f.run(t, VPNFindPods(f.env))
	assert.Equal(t, engine.StatusError, st)
	assert.Contains(t, reason, "no OpenVPN pod found")
	assert.Contains(t, reason, "--selector")
	_, err := f.env.gather(t.Context(), 0)
	assert.True(t, kube.IsUsage(err))
}

// Regression (issue 12): `vpn-trace -l 'app in ('` exited 3 with VPN001 ERROR; the flag values
// are now parsed before any check runs, and a bad one is a usage error naming its flag.
func TestInvalidFlagValuesAreRefusedBeforeAnyCheckRuns(t *testing.T) {
	for _, tc := range []struct {
		flags Flags
		names string
	}{
		{Flags{Selector: "app in ("}, "--selector"},
		{Flags{ClusterDNS: "kube-dns"}, "--cluster-dns"},
		{Flags{PodTarget: "10.244.1.7:http"}, "--pod-target"},
		{Flags{Public: "198.51.100.1:99999"}, "--public"},
		{Flags{Public: "a b:443"}, "--public"},
	} {
		_, err := ParseOptions(tc.flags, Options{})
		require.Error(t, err, "%+v", tc.flags)
		assert.Contains(t, err.Error(), tc.names)
	}
	o, err := ParseOptions(Flags{Selector: "app=openvpn", ClusterDNS: "10.96.0.10", PodTarget: "10.244.1.7", Public: "198.51.100.1"}, Options{})
	require.NoError(t, err)
	assert.Equal(t, "app=openvpn", o.Selector.String())
	assert.Equal(t, "10.96.0.10", o.ClusterDNS.String())
	assert.Equal(t, "10.244.1.7:0", o.PodTarget.String())
	assert.Equal(t, "198.51.100.1:443", o.Public)
}
