package config

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// addPortPatch is the JSON patch adding port/proto -> target to svc in a form the API server
// accepts: once a Service has several ports each needs a unique name (kubernetes
// pkg/apis/core/validation ValidateService, validateServicePort with requireName), so an
// unnamed existing port is named too and the new name is one not taken.
func addPortPatch(svc *corev1.Service, base string, port int32, proto corev1.Protocol, target any) string {
	var ops []remedy.PatchOp
	taken := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		taken[p.Name] = true
	}
	for i, p := range svc.Spec.Ports {
		if p.Name != "" {
			continue
		}
		name := freeName(fmt.Sprintf("%s-%d", strings.ToLower(string(kubeobj.Protocol(p.Protocol))), p.Port), taken)
		ops = append(ops, remedy.PatchOp{Op: "add", Path: fmt.Sprintf("/spec/ports/%d/name", i), Value: name})
	}
	ops = append(ops, remedy.PatchOp{Op: "add", Path: "/spec/ports/-",
		Value: map[string]any{"name": freeName(base, taken), "port": port, "protocol": string(proto), "targetPort": target}})
	return remedy.JSONPatch(svc.Namespace, "service", svc.Name, ops...)
}

// freeName returns base, or base-2, base-3... whichever is not taken, and takes it.
func freeName(base string, taken map[string]bool) string {
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	taken[name] = true
	return name
}
