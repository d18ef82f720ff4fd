package podruntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestSysctlPlan(t *testing.T) {
	cases := []struct {
		name string
		spec corev1.PodSpec
		want [][2]string
	}{
		{"a pod without the fix writes nothing: its namespace keeps the kernel's and the CNI's value", corev1.PodSpec{},
			[][2]string{}},
		{"an initContainer running sysctl -w turns forwarding on", corev1.PodSpec{InitContainers: []corev1.Container{
			{Name: "enable-forwarding", Command: []string{"sysctl", "-w", "net.ipv4.ip_forward=1"}}}},
			[][2]string{{"net.ipv4.ip_forward", "1"}}},
		{"an initContainer shell writing /proc/sys turns forwarding on", corev1.PodSpec{InitContainers: []corev1.Container{
			{Name: "fwd", Command: []string{"sh", "-c"}, Args: []string{"echo 1 > /proc/sys/net/ipv4/ip_forward"}}}},
			[][2]string{{"net.ipv4.ip_forward", "1"}}},
		{"securityContext.sysctls turns forwarding on", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}}},
			[][2]string{{"net.ipv4.ip_forward", "1"}}},
		{"non-network sysctls are not applied to the pod's network namespace", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
			Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}},
			[][2]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SysctlPlan(&corev1.Pod{Spec: tc.spec}))
		})
	}
}

func TestResolvConfFollowsDNSPolicy(t *testing.T) {
	node := "nameserver 198.51.100.53\n"
	pod := &corev1.Pod{}
	pod.Namespace = "traefik"
	pod.Spec.DNSPolicy = corev1.DNSDefault
	assert.Equal(t, node, ResolvConf(pod, node, "10.96.0.10"))
	pod.Spec.DNSPolicy = corev1.DNSClusterFirst
	got := ResolvConf(pod, node, "10.96.0.10")
	assert.Contains(t, got, "nameserver 10.96.0.10")
	assert.Contains(t, got, "search traefik.svc.cluster.local svc.cluster.local cluster.local")
	pod.Spec.DNSPolicy = ""
	assert.Contains(t, ResolvConf(pod, node, "10.96.0.10"), "nameserver 10.96.0.10", "the API default is ClusterFirst")
}
