package facts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// psaBaseline refuses what Pod Security's baseline level refuses of the two variants, with the
// API server's own words (staging/src/k8s.io/pod-security-admission/policy
// check_privileged.go and check_sysctls.go), and records every dry-run pod it was sent.
type psaBaseline struct {
	allowed bool
	sent    []*corev1.Pod
	dryRun  [][]string
}

func (p *psaBaseline) clientset() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authorizationv1.SelfSubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: p.allowed}}, nil
	})
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateActionImpl)
		pod := c.GetObject().(*corev1.Pod)
		p.sent = append(p.sent, pod)
		p.dryRun = append(p.dryRun, c.CreateOptions.DryRun)
		for _, ic := range pod.Spec.InitContainers {
			if ic.SecurityContext != nil && ic.SecurityContext.Privileged != nil && *ic.SecurityContext.Privileged {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.GenerateName,
					errorf(`violates PodSecurity "baseline:latest": privileged (container "enable-ip-forward" must not set securityContext.privileged=true)`))
			}
		}
		if pod.Spec.SecurityContext != nil && len(pod.Spec.SecurityContext.Sysctls) > 0 {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.GenerateName,
				errorf(`violates PodSecurity "baseline:latest": forbidden sysctls (net.ipv4.ip_forward)`))
		}
		return true, pod, nil
	})
	return cs
}

type errorf string

func (e errorf) Error() string { return string(e) }

func vpnPodMemos() *podMemos {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-0", Labels: map[string]string{"app": "openvpn"}},
		Spec: corev1.PodSpec{NodeName: "node-vpn",
			Containers: []corev1.Container{{Name: "openvpn", Image: "kylemanna/openvpn:2.4",
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}}}
	return &podMemos{pod: pod, ref: podexec.PodRef{Namespace: "vpn", Name: "openvpn-0"}, container: "openvpn"}
}

func TestProveFixesAsksTheAPIServerWithADryRunOfEachVariant(t *testing.T) {
	psa := &psaBaseline{allowed: true}
	g := New(Seams{Client: clientgo.Wrap(psa.clientset())}, Options{ProveFixes: true})
	adm, notProven := g.proveFixes(t.Context(), vpnPodMemos())
	require.Empty(t, notProven)
	require.Len(t, psa.sent, 2)
	for i, pod := range psa.sent {
		assert.Equal(t, []string{metav1.DryRunAll}, psa.dryRun[i], "nothing is stored")
		assert.Empty(t, pod.Spec.NodeName, "judged as a new pod")
		assert.Empty(t, pod.Spec.Volumes, "the token volume is the API server's to add")
		assert.Empty(t, pod.Spec.Containers[0].VolumeMounts)
		assert.Equal(t, "openvpn", pod.Labels["app"], "policies matching labels see the pod's")
	}
	assert.False(t, adm[VariantInitContainer].Admitted)
	assert.Contains(t, adm[VariantInitContainer].Refusal, "privileged")
	assert.False(t, adm[VariantSysctls].Admitted)
	assert.Contains(t, adm[VariantSysctls].Refusal, "forbidden sysctls")
}

func TestProveFixesWithoutTheGrantSaysWhatIsNotProven(t *testing.T) {
	psa := &psaBaseline{allowed: false}
	g := New(Seams{Client: clientgo.Wrap(psa.clientset())}, Options{ProveFixes: true})
	adm, notProven := g.proveFixes(t.Context(), vpnPodMemos())
	assert.Empty(t, adm)
	assert.Empty(t, psa.sent, "no pod is sent without the grant")
	assert.Contains(t, notProven, "may not create pods in vpn")
	assert.Contains(t, notProven, "rbac-vpn-dryrun")

	g = New(Seams{Client: clientgo.Wrap(psa.clientset())}, Options{})
	_, notProven = g.proveFixes(t.Context(), vpnPodMemos())
	assert.Contains(t, notProven, "--prove-fixes")
	assert.Empty(t, psa.sent)
}

func TestWithForwardFixMergesByNameAsTheStrategicPatchDoes(t *testing.T) {
	spec := corev1.PodSpec{InitContainers: []corev1.Container{{Name: "enable-ip-forward", Image: "old"}, {Name: "other"}},
		SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "0"}, {Name: "net.core.somaxconn", Value: "1024"}}}}
	ic := WithForwardFix(spec, VariantInitContainer)
	require.Len(t, ic.InitContainers, 2)
	assert.Equal(t, "busybox:1.36.1", ic.InitContainers[0].Image)
	assert.Equal(t, "old", spec.InitContainers[0].Image, "the input is not changed")
	sc := WithForwardFix(spec, VariantSysctls)
	assert.ElementsMatch(t, []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}, {Name: "net.ipv4.ip_forward", Value: "1"}}, sc.SecurityContext.Sysctls)
	assert.Equal(t, "0", spec.SecurityContext.Sysctls[0].Value)
}
