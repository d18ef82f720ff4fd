package podruntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// oneConfigMap serves the ConfigMap cm for every name.
type oneConfigMap struct{ cm *corev1.ConfigMap }

func (s oneConfigMap) ConfigMap(string, string) (*corev1.ConfigMap, error) { return s.cm, nil }
func (s oneConfigMap) Secret(string, string) (*corev1.Secret, error)       { return nil, nil }

func configMapPod(items []corev1.KeyToPath, subPath string) (*corev1.Pod, corev1.Container) {
	c := corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app", SubPath: subPath}}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: items},
		}}}},
	}, c
}

// The API server refuses keys, item paths and subPaths with "..": the lab does not rely on it
// and never writes outside the pod's directory.
func TestVolumeFilesStayInsideThePodDirectory(t *testing.T) {
	src := oneConfigMap{&corev1.ConfigMap{Data: map[string]string{"app.conf": "a", "../../escape": "x"}}}
	pod, c := configMapPod(nil, "")
	vf, _, err := materialize(src, pod, c, "/s/pod")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"/s/pod/volumes/cfg/app.conf": []byte("a")}, vf.files)

	pod, c = configMapPod([]corev1.KeyToPath{{Key: "app.conf", Path: "../../../etc/app.conf"}, {Key: "app.conf", Path: "conf/app.conf"}}, "")
	vf, _, err = materialize(src, pod, c, "/s/pod")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"/s/pod/volumes/cfg/conf/app.conf": []byte("a")}, vf.files)

	pod, c = configMapPod(nil, "../../../etc/passwd")
	_, _, err = materialize(src, pod, c, "/s/pod")
	assert.ErrorContains(t, err, "outside the volume")
}
