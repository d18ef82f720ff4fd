package podruntime

import (
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

var (
	sysctlWrite = regexp.MustCompile(`sysctl\s+(?:-\w+\s+)*([a-z0-9_.]+)=(\S+)`)
	procWrite   = regexp.MustCompile(`echo\s+(\S+)\s*>\s*/proc/sys/([a-z0-9_/]+)`)
)

// PodSysctls is what a pod sets in its own network namespace: securityContext.sysctls, then
// what its init containers write with `sysctl -w k=v` or `echo v > /proc/sys/...` (they run in
// the pod's namespace before the main containers, so their effect lasts for the pod's life).
func PodSysctls(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			out[s.Name] = s.Value
		}
	}
	for _, ic := range pod.Spec.InitContainers {
		script := strings.Join(append(append([]string{}, ic.Command...), ic.Args...), " ")
		for _, m := range sysctlWrite.FindAllStringSubmatch(script, -1) {
			out[m[1]] = strings.Trim(m[2], `"'`)
		}
		for _, m := range procWrite.FindAllStringSubmatch(script, -1) {
			out[strings.ReplaceAll(m[2], "/", ".")] = strings.Trim(m[1], `"'`)
		}
	}
	return out
}

// SysctlPlan is the ordered list of key=value writes a pod makes in its own network namespace
// (net.* only: the others are not per network namespace). What the namespace had before (the
// kernel's copy, the CNI's write) stays unless the pod writes the same key.
func SysctlPlan(pod *corev1.Pod) [][2]string {
	want := PodSysctls(pod)
	keys := make([]string, 0, len(want))
	for k := range want {
		if strings.HasPrefix(k, "net.") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	plan := make([][2]string, 0, len(keys))
	for _, k := range keys {
		plan = append(plan, [2]string{k, want[k]})
	}
	return plan
}
