package kube

import (
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// APIServerFlags is what the kube-apiserver's command line says about admission plugins,
// read from its pods where the cluster shows them: kubeadm runs the API server as a static pod
// kube-system/kube-apiserver-NODE labelled component=kube-apiserver (kubernetes
// cmd/kubeadm/app/util/staticpod/utils.go ComponentPod), and the kubelet publishes a mirror
// pod of it; RKE2 does the same. k3s runs it inside its own process, and managed clusters
// (EKS, GKE, AKS) show no such pod: there the flags cannot be seen.
type APIServerFlags struct {
	// Seen: at least one API server pod was read; Sources names them.
	Seen    bool
	Sources []string
	// Why says why the flags are not seen (no such pod, or the pods could not be read).
	Why string
	// Enabled and Disabled are --enable-admission-plugins (or the deprecated
	// --admission-control) and --disable-admission-plugins of the first pod.
	Enabled, Disabled []string
	// Disagree names the pods whose admission flags differ from the first one's (a control
	// plane mid-upgrade): the plugin is then on for some requests only.
	Disagree []string
}

// APIServerSelector finds kubeadm's (and RKE2's) API server pods.
const APIServerSelector = "component=kube-apiserver"

// PluginOn says whether an admission plugin that is off by default (DenyServiceExternalIPs is,
// kubernetes pkg/kubeapiserver/options/plugins.go DefaultOffAdmissionPlugins) is on: it is
// when the enabled list names it. known is false when the flags were not seen or the API
// server pods disagree.
func (f APIServerFlags) PluginOn(name string) (on, known bool) {
	if !f.Seen || len(f.Disagree) > 0 {
		return false, false
	}
	return slices.Contains(f.Enabled, name) && !slices.Contains(f.Disabled, name), true
}

// Source is the pods the flags were read from, for evidence.
func (f APIServerFlags) Source() string { return strings.Join(f.Sources, ", ") }

// readAPIServerFlags reads the admission flags of the API server pods.
func readAPIServerFlags(pods []corev1.Pod) APIServerFlags {
	var f APIServerFlags
	type flags struct{ enabled, disabled []string }
	var first *flags
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		c, ok := apiServerContainer(p.Spec)
		if !ok {
			continue
		}
		var fl flags
		args := append(append([]string{}, c.Command...), c.Args...)
		for name, value := range commandFlags(args) {
			switch name {
			case "enable-admission-plugins", "admission-control":
				fl.enabled = append(fl.enabled, kubeobj.SplitFlagList(value)...)
			case "disable-admission-plugins":
				fl.disabled = append(fl.disabled, kubeobj.SplitFlagList(value)...)
			}
		}
		sort.Strings(fl.enabled)
		sort.Strings(fl.disabled)
		f.Seen = true
		f.Sources = append(f.Sources, kubeobj.Ref("Pod", p.Namespace, p.Name))
		if first == nil {
			first = &fl
			f.Enabled, f.Disabled = fl.enabled, fl.disabled
		} else if !slices.Equal(first.enabled, fl.enabled) || !slices.Equal(first.disabled, fl.disabled) {
			f.Disagree = append(f.Disagree, kubeobj.Ref("Pod", p.Namespace, p.Name))
		}
	}
	if !f.Seen {
		f.Why = fmt.Sprintf("no pod labelled %s runs kube-apiserver in kube-system (k3s and managed control planes show none)", APIServerSelector)
	}
	return f
}

// apiServerContainer is the container running kube-apiserver.
func apiServerContainer(spec corev1.PodSpec) (corev1.Container, bool) {
	for _, c := range spec.Containers {
		cmd := append(append([]string{}, c.Command...), c.Args...)
		if c.Name == "kube-apiserver" || (len(cmd) > 0 && strings.HasSuffix(cmd[0], "kube-apiserver")) {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// commandFlags yields the flags of args in pflag's forms "--name=value" and "--name value" (the
// next argument is the value unless it starts with "-"; a flag without one has value ""), in
// order; other arguments are skipped.
func commandFlags(args []string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for len(args) > 0 {
			arg := args[0]
			args = args[1:]
			flag, ok := strings.CutPrefix(arg, "--")
			if !ok {
				continue
			}
			name, value, hasValue := strings.Cut(flag, "=")
			if !hasValue && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				value, args = args[0], args[1:]
			}
			if !yield(name, value) {
				return
			}
		}
	}
}
