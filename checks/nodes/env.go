// Package nodes holds doctor's reading of the nodes that carry our addresses (LA201): their
// sockets through a node shell, and the pods that claim ports by their spec.
package nodes

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// Env is what the node checks read.
type Env struct {
	Setup *kube.Setup
	// Pods lists the pods scheduled on a node.
	Pods PodLister
	// Shells opens a shell in a node's network namespace; nil with NoHelpers.
	Shells ShellOpener
	// NoHelpers: doctor stays read-only, so the nodes' sockets are not read.
	NoHelpers bool
	// ExecTimeout bounds each command run on a node (--exec-timeout).
	ExecTimeout time.Duration
	// Reader reads each node's addresses and links once per run (LA202, LA203; LA101 shares
	// it); nil or Unavailable: the nodes' own state is not read.
	Reader *noderead.NodeNetReader
}

func (e *Env) execTimeout() time.Duration {
	if e.ExecTimeout > 0 {
		return e.ExecTimeout
	}
	return DefaultExecTimeout
}

// PodLister lists the pods of one node.
type PodLister interface {
	PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error)
}

// ShellOpener gives a shell in a node's network namespace (an existing hostNetwork pod or a
// labelled helper pod), closed by the caller.
type ShellOpener interface {
	Open(ctx context.Context, node *corev1.Node) (*podexec.NodeShell, error)
}

// ClientPods is the PodLister of a clientset: one LIST with a field selector per node.
type ClientPods struct{ Client client.Interface }

// PodsOnNode lists the pods whose spec.nodeName is node.
func (c ClientPods) PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	l, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Checks returns the node checks in catalogue order.
func Checks(env *Env) []engine.Check {
	return []engine.Check{NodeListeners(env), KubeProxyMode(env), LinkSpeed(env)}
}
