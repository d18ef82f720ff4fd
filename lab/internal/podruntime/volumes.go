package podruntime

import (
	"fmt"
	"maps"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// Sources is how the runtime reads the objects that volumes project.
type Sources interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
}

// volumeFiles is the content of a pod's volumes: host path -> bytes, plus the paths that a
// subPath mount pins (the kubelet never refreshes those after the container started).
type volumeFiles struct {
	files     map[string][]byte
	writeOnce map[string]bool
}

// materialize computes the files of every configMap/secret volume of pod under dir/volumes and
// the path map of container c. A missing ConfigMap or Secret is an error, like a kubelet that
// keeps the pod in ContainerCreating.
func materialize(src Sources, pod *corev1.Pod, c corev1.Container, dir string) (volumeFiles, PathMap, error) {
	vf := volumeFiles{files: map[string][]byte{}, writeOnce: map[string]bool{}}
	hostDirs := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		vdir := filepath.Join(dir, "volumes", v.Name)
		hostDirs[v.Name] = vdir
		switch {
		case v.ConfigMap != nil:
			cm, err := src.ConfigMap(pod.Namespace, v.ConfigMap.Name)
			if err != nil {
				if v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
					continue
				}
				return vf, nil, fmt.Errorf("volume %s: configmap %s/%s: %w", v.Name, pod.Namespace, v.ConfigMap.Name, err)
			}
			data := map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			maps.Copy(data, cm.BinaryData)
			project(vf.files, vdir, data, v.ConfigMap.Items)
		case v.Secret != nil:
			sec, err := src.Secret(pod.Namespace, v.Secret.SecretName)
			if err != nil {
				if v.Secret.Optional != nil && *v.Secret.Optional {
					continue
				}
				return vf, nil, fmt.Errorf("volume %s: secret %s/%s: %w", v.Name, pod.Namespace, v.Secret.SecretName, err)
			}
			project(vf.files, vdir, sec.Data, v.Secret.Items)
		}
	}
	var pm PathMap
	for _, m := range c.VolumeMounts {
		vdir, ok := hostDirs[m.Name]
		if !ok {
			return vf, nil, fmt.Errorf("container %s mounts unknown volume %s", c.Name, m.Name)
		}
		host := vdir
		if m.SubPath != "" && !filepath.IsLocal(m.SubPath) {
			return vf, nil, fmt.Errorf("container %s mounts volume %s with subPath %q outside the volume", c.Name, m.Name, m.SubPath)
		}
		if m.SubPath != "" {
			host = filepath.Join(vdir, m.SubPath)
			vf.writeOnce[host] = true
		}
		pm = append(pm, PathMapping{Container: m.MountPath, Host: host})
	}
	return vf, pm, nil
}

// project writes a volume's keys (or its items) as files under dir. A name that would leave dir
// is skipped: the API server refuses such keys and paths (they may not contain ".."), and the
// lab does not write outside a pod's directory even if one got through.
func project(files map[string][]byte, dir string, data map[string][]byte, items []corev1.KeyToPath) {
	if len(items) == 0 {
		for k, b := range data {
			if filepath.IsLocal(k) {
				files[filepath.Join(dir, k)] = b
			}
		}
		return
	}
	for _, it := range items {
		if b, ok := data[it.Key]; ok && filepath.IsLocal(it.Path) {
			files[filepath.Join(dir, it.Path)] = b
		}
	}
}
