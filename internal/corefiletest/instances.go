// Package corefiletest builds, from Kubernetes objects, the CoreDNS instances they run (the
// files each pod sees, the -conf path) and reads the ground truth the corpus harness recorded
// from the real CoreDNS binary (testdata/corpus/*/coredns.yaml), so that tests can hold the
// Corefile model to what CoreDNS really does.
package corefiletest

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// Instance is one CoreDNS container of a Deployment and the files it sees.
type Instance struct {
	// Workload is "Deployment NS/NAME container C", as the corpus harness names it.
	Workload string
	Files    *corefile.Files
	Conf     string
	// Name says where the Corefile comes from ("ConfigMap NS/NAME key K").
	Name string
}

// Instances lists the CoreDNS containers (started with -conf) of the Deployments and DaemonSets in objs.
func Instances(objs []runtime.Object) []Instance {
	cms := map[string]map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			if cms[cm.Namespace] == nil {
				cms[cm.Namespace] = map[string]*corev1.ConfigMap{}
			}
			cms[cm.Namespace][cm.Name] = cm
		}
	}
	var out []Instance
	for _, o := range objs {
		// Deployments, and DaemonSets (the hostPort form, issue 26), as the corpus harness runs them.
		var kind string
		var d metav1.Object
		var spec *corev1.PodSpec
		switch w := o.(type) {
		case *appsv1.Deployment:
			kind, d, spec = "Deployment", w, &w.Spec.Template.Spec
		case *appsv1.DaemonSet:
			kind, d, spec = "DaemonSet", w, &w.Spec.Template.Spec
		default:
			continue
		}
		for i := range spec.Containers {
			c := &spec.Containers[i]
			if !startedWithConf(c) {
				continue // the harness runs the containers started with -conf
			}
			byName := cms[d.GetNamespace()]
			files, projected := kube.PodFiles(spec, c, byName, func(n string) bool { return byName[n] != nil })
			conf := kube.ConfPath(c)
			name := "file " + conf
			for _, p := range projected {
				if p.Path == conf {
					name = fmt.Sprintf("ConfigMap %s/%s key %s", d.GetNamespace(), p.ConfigMap, p.Key)
				}
			}
			out = append(out, Instance{Workload: fmt.Sprintf("%s %s/%s container %s", kind, d.GetNamespace(), d.GetName(), c.Name), Files: files, Conf: conf, Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workload < out[j].Workload })
	return out
}

// Load loads the instance's Corefile with the model.
func (in Instance) Load() (*corefile.Corefile, error) {
	return corefile.Load(in.Name, in.Files, in.Conf)
}

func startedWithConf(c *corev1.Container) bool {
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if a == "-conf" || a == "--conf" || strings.HasPrefix(a, "-conf=") || strings.HasPrefix(a, "--conf=") {
			return true
		}
	}
	return false
}

// Mounts are the pod's files as the runner lays them out.
func Mounts(files *corefile.Files) []corednsrun.Mount {
	out := make([]corednsrun.Mount, 0, len(files.Mounts()))
	for _, m := range files.Mounts() {
		rm := corednsrun.Mount{Path: m.Path, Volume: m.Volume, Files: map[string]string{}}
		for rel, f := range m.Files {
			rm.Files[rel] = f.Content
		}
		out = append(out, rm)
	}
	return out
}
