package podruntime

import (
	"maps"
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

// NamespaceDefaults are the values a fresh pod network namespace starts with for the sysctls
// the lab manages: a new pod does not inherit a hand fix made in its predecessor.
var NamespaceDefaults = map[string]string{"net.ipv4.ip_forward": "0"}

// SysctlPlan is the ordered list of key=value writes for a new pod on a dedicated node.
func SysctlPlan(pod *corev1.Pod) [][2]string {
	want := map[string]string{}
	maps.Copy(want, NamespaceDefaults)
	for k, v := range PodSysctls(pod) {
		if strings.HasPrefix(k, "net.") {
			want[k] = v
		}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	plan := make([][2]string, 0, len(keys))
	for _, k := range keys {
		plan = append(plan, [2]string{k, want[k]})
	}
	return plan
}
