package config

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
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

// movePortsInside is the fix for ports of a Service that must not face the LAN (kube-proxy
// captures every port of a Service on its externalIPs): a Service of their own without
// externalIPs keeps them reachable inside the cluster, then a JSON patch removes them from svc,
// from the highest index down, each after a test that it is the port named.
func movePortsInside(svc *corev1.Service, idx []int) string {
	ports := make([]corev1.ServicePort, 0, len(idx))
	for _, i := range idx {
		ports = append(ports, svc.Spec.Ports[i])
	}
	inside := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-internal", Labels: svc.Labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: svc.Spec.Selector, Ports: ports},
	}
	ops := make([]remedy.PatchOp, 0, 2*len(idx))
	for k, i := range slices.Backward(idx) {
		path := fmt.Sprintf("/spec/ports/%d", i)
		ops = append(ops, remedy.PatchOp{Op: "test", Path: path + "/port", Value: ports[k].Port},
			remedy.PatchOp{Op: "remove", Path: path})
	}
	return kube.ManagedNote(svc, "Service", "spec.ports") +
		remedy.Comment("keep these ports inside the cluster, on a Service without externalIPs, then take them off this one:") + "\n" +
		remedy.Apply(remedy.YAML(inside)) + "\n" +
		remedy.JSONPatch(svc.Namespace, "service", svc.Name, ops...)
}
